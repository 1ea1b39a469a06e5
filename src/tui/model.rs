//! The room's agent as the TUI knows it: the state's `agent` (its model
//! and the models an owner may choose, named in the status bar), `/model
//! [NAME]` (alone: lists them; with a name: chooses, an owner's), and what
//! the session cost: the usage of the replies this client has, summed.

use crate::client::explain;
use crate::client::rpc::{Answer, RoomOp};
use crate::protocol::{AgentState, Usage};
use crate::tui::app::{App, Effect};
use crate::tui::roles::Deed;

impl App {
    /// The state's `agent`.
    pub(crate) fn set_agent(&mut self, agent: Option<AgentState>) -> bool {
        let changed = self.agent != agent;
        self.agent = agent;
        changed
    }

    /// The model the room's turns use, when the backend says.
    pub fn room_model(&self) -> Option<&str> {
        self.agent.as_ref()?.model.as_deref()
    }

    /// The usage of the agent's replies this client has, summed.
    pub fn session_usage(&self) -> Option<Usage> {
        let mut total: Option<Usage> = None;
        for usage in self.chat.messages().filter_map(|m| m.usage.as_ref()) {
            total.get_or_insert_with(Usage::default).add(usage);
        }
        total
    }

    /// `/model [NAME]`: lists the models (the room's marked), or chooses one.
    pub(crate) fn model_command(
        &mut self,
        arg: &str,
        effects: &mut Vec<Effect>,
    ) -> Result<(), String> {
        // Choosing is an owner's: said before anything about the models.
        if !arg.is_empty() {
            self.may(Deed::SetModel)?;
        }
        let Some(agent) = self.agent.clone() else {
            return Err("this backend does not say which models its agent may use".into());
        };
        if arg.is_empty() {
            let current = agent.model.as_deref().unwrap_or("the service's first");
            let others = match agent.models.as_slice() {
                [] => "no others to choose from".to_string(),
                list => format!("choose from: {}", list.join(", ")),
            };
            let bounds = agent
                .bounds_text()
                .map(|b| format!("; a turn takes {b}"))
                .unwrap_or_default();
            self.toast(
                format!("The agent's model is {current}; {others}{bounds}"),
                false,
            );
            return Ok(());
        }
        if !agent.models.iter().any(|m| m == arg) {
            return Err(format!(
                "/model: {arg} is not one of this backend's models ({})",
                agent.models.join(", ")
            ));
        }
        effects.push(Effect::Call(RoomOp::SetModel(arg.to_string())));
        Ok(())
    }

    /// The answer of `set_model`.
    pub(crate) fn on_model_answer(&mut self, answer: &Answer) {
        match (&answer.op, &answer.result) {
            (RoomOp::SetModel(model), Ok(_)) => {
                self.toast(format!("The agent's model is now {model}"), false);
            }
            (RoomOp::SetModel(model), Err(err)) => self.toast(
                format!("The model was not set to {model}: {}", explain::rpc(err)),
                true,
            ),
            _ => {}
        }
    }
}
