//! `duet model [NAME]`: shows the model of the room's agent and those an
//! owner may choose, or chooses one (`POST …/model`). The show reads a
//! socket's first state, as `duet policy` does: no route reads the state.

use super::ClientArgs;
use crate::client::commands::{client_for, socket_params};
use crate::client::explain;
use crate::client::ps::said;
use crate::client::socket::state_once;
use crate::protocol::AgentState;
use clap::Args;
use std::process::ExitCode;

#[derive(Debug, Clone, Args)]
pub struct ModelArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The model to use, one of the backend's (absent: shows them)
    pub model: Option<String>,
}

/// What `duet model` prints of the room's agent.
pub fn model_text(agent: &AgentState) -> String {
    let current = agent.model.as_deref().unwrap_or("(the service's first)");
    let mut text = format!("model: {current}\n");
    if agent.models.is_empty() {
        text.push_str("models: none listed (the backend's --ai-models)\n");
    } else {
        text.push_str("models:\n");
        for (n, model) in agent.models.iter().enumerate() {
            let mark = if Some(model.as_str()) == agent.model.as_deref() {
                "*"
            } else {
                " "
            };
            let default = if n == 0 { " (default)" } else { "" };
            text.push_str(&format!("{mark} {model}{default}\n"));
        }
    }
    if let Some(bounds) = agent.bounds_text() {
        text.push_str(&format!("a turn: {bounds}\n"));
    }
    text
}

/// `duet model [NAME]`.
pub async fn model(args: ModelArgs) -> anyhow::Result<ExitCode> {
    let settings = super::settings(&args.client)?;
    let client = client_for(&settings)?;
    if let Some(model) = args.model {
        return match client.set_model(model.trim()).await {
            Ok(model) => {
                println!("model: {model}");
                Ok(ExitCode::SUCCESS)
            }
            Err(err) => said(&explain::http(&err)),
        };
    }
    let params = socket_params(&settings, &client, "model", true)?;
    match state_once(&params).await {
        Ok(state) => match state.agent {
            Some(agent) => {
                print!("{}", model_text(&agent));
                Ok(ExitCode::SUCCESS)
            }
            None => said(
                "this backend does not say which model its agent uses (it is older than `duet model`)",
            ),
        },
        Err(why) => said(&why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_room_model_is_marked_and_the_first_is_the_default() {
        let agent = AgentState {
            model: Some("b".into()),
            models: vec!["a".into(), "b".into()],
            ..AgentState::default()
        };
        assert_eq!(
            model_text(&agent),
            "model: b\nmodels:\n  a (default)\n* b\n"
        );
        let bounded = AgentState {
            steps: 10,
            turn_secs: 600,
            context_tokens: 32_000,
            ..agent
        };
        assert!(
            model_text(&bounded)
                .ends_with("a turn: at most 10 rounds and 600 s, 32000 tokens of context\n")
        );
    }
}
