//! The room's calls beyond messages and commands: background processes,
//! checkpoints, invites and the approval policy, and the workspace's files
//! (each one request, through the client's `send`).

use super::*;

impl HttpClient {
    /// `POST /processes`: starts a background process (named after its
    /// program unless `name` says otherwise).
    pub async fn start_process(&self, cmd: &str, name: Option<&str>) -> Result<Process, HttpError> {
        let body = StartProcess {
            cmd: cmd.to_string(),
            name: name.map(str::to_string),
            user_id: Some(self.name.clone()),
        };
        let answer: ProcessResponse = self.post("processes", &body).await?;
        Ok(answer.process)
    }

    /// `GET /processes`: those that run and the last that ended.
    pub async fn processes(&self) -> Result<Vec<Process>, HttpError> {
        let answer: ProcessesResponse = self.get_json(&self.room_url("processes")).await?;
        Ok(answer.processes)
    }

    /// `GET /processes/{id}/logs`: the last 64 KiB of each stream.
    pub async fn process_logs(&self, id: &str) -> Result<ProcessLogs, HttpError> {
        self.get_json(&self.process_url(id, Some("logs"))?).await
    }

    /// `DELETE /processes/{id}`: answers once it ended; whether this
    /// request stopped it (false: it had ended already).
    pub async fn kill_process(&self, id: &str) -> Result<bool, HttpError> {
        let url = self.process_url(id, None)?;
        let text = self.backend.send_text(Method::DELETE, &url, None).await?;
        let answer: KillResponse = decode(&url, &text)?;
        Ok(answer.killed)
    }

    /// `GET /ports`: the ports something listens on in the sandbox.
    pub async fn ports(&self) -> Result<Vec<PortState>, HttpError> {
        let answer: PortsResponse = self.get_json(&self.room_url("ports")).await?;
        Ok(answer.ports)
    }

    /// The URL of a process (and a part of it), its id escaped.
    fn process_url(&self, id: &str, tail: Option<&str>) -> Result<String, HttpError> {
        let segments: Vec<&str> = std::iter::once(id).chain(tail).collect();
        self.segments_url("processes", &segments)
    }

    /// `POST /checkpoints`: a copy of /workspace now (named by the server
    /// unless `name` says otherwise).
    pub async fn create_checkpoint(&self, name: Option<&str>) -> Result<Checkpoint, HttpError> {
        let body = crate::client::checkpoints::CreateCheckpoint {
            name: name.map(str::to_string),
            user_id: Some(self.name.clone()),
        };
        let answer: CheckpointResponse = self.post("checkpoints", &body).await?;
        Ok(answer.checkpoint)
    }

    /// `GET /checkpoints`: the room's checkpoints, oldest first.
    pub async fn checkpoints(&self) -> Result<Vec<Checkpoint>, HttpError> {
        let answer: CheckpointsResponse = self.get_json(&self.room_url("checkpoints")).await?;
        Ok(answer.checkpoints)
    }

    /// `POST /checkpoints/{id}/restore`: /workspace becomes that copy.
    pub async fn restore_checkpoint(&self, id: &str) -> Result<bool, HttpError> {
        let url = self.segments_url("checkpoints", &[id, "restore"])?;
        let body = crate::client::checkpoints::ByUser {
            user_id: Some(self.name.clone()),
        };
        let json = serde_json::to_vec(&body).map_err(|err| HttpError::Invalid(err.to_string()))?;
        let text = self
            .backend
            .send_text(Method::POST, &url, Some(json))
            .await?;
        let answer: RestoreResponse = decode(&url, &text)?;
        Ok(answer.restored)
    }

    /// `DELETE /checkpoints/{id}`.
    pub async fn delete_checkpoint(&self, id: &str) -> Result<bool, HttpError> {
        let url = self.segments_url("checkpoints", &[id])?;
        let text = self.backend.send_text(Method::DELETE, &url, None).await?;
        let answer: DeleteResponse = decode(&url, &text)?;
        Ok(answer.deleted)
    }

    /// `POST /fork`: room `to` starts from this room's /workspace (or a
    /// checkpoint of it); answers the new room's id.
    pub async fn fork(&self, to: &str, checkpoint_id: Option<&str>) -> Result<String, HttpError> {
        let body = crate::client::checkpoints::Fork {
            to: to.to_string(),
            checkpoint_id: checkpoint_id.map(str::to_string),
            user_id: Some(self.name.clone()),
        };
        let answer: ForkResponse = self.post("fork", &body).await?;
        Ok(answer.room_id)
    }

    /// `POST /invites`: a link for someone else, with `role`; the only
    /// answer that shows its token.
    pub async fn create_invite(
        &self,
        mut request: crate::client::access::InviteRequest,
    ) -> Result<InviteCreated, HttpError> {
        request.user_id.get_or_insert_with(|| self.name.clone());
        self.post("invites", &request).await
    }

    /// `GET /invites`: the invites that can still be used, oldest first.
    pub async fn invites(&self) -> Result<Vec<Invite>, HttpError> {
        let answer: InvitesResponse = self.get_json(&self.room_url("invites")).await?;
        Ok(answer.invites)
    }

    /// `DELETE /invites/{id}`: its token stops working at once.
    pub async fn revoke_invite(&self, id: &str) -> Result<bool, HttpError> {
        let url = self.segments_url("invites", &[id])?;
        let text = self.backend.send_text(Method::DELETE, &url, None).await?;
        let answer: RevokeResponse = decode(&url, &text)?;
        Ok(answer.revoked)
    }

    /// `POST /policy`: the room's approval policy (and, given, its own
    /// allow list); answers the policy as set.
    pub async fn set_policy(
        &self,
        policy: Policy,
        allow: Option<Vec<String>>,
    ) -> Result<Policy, HttpError> {
        let body = crate::client::access::PolicyRequest { policy, allow };
        let answer: PolicyResponse = self.post("policy", &body).await?;
        Ok(answer.policy)
    }

    /// `POST /model`: the model of the room's agent; answers it.
    pub async fn set_model(&self, model: &str) -> Result<String, HttpError> {
        let body = crate::protocol::ModelRequest {
            model: model.to_string(),
            user_id: Some(self.name.clone()),
        };
        let answer: crate::protocol::ModelResponse = self.post("model", &body).await?;
        Ok(answer.model)
    }

    /// `POST /approve`: answers an agent's command waiting for a person.
    pub async fn approve(&self, approval_id: &str, approved: bool) -> Result<bool, HttpError> {
        let body = crate::client::access::ApproveRequest {
            approval_id: approval_id.to_string(),
            approved,
        };
        let answer: DecidedResponse = self.post("approve", &body).await?;
        Ok(answer.decided)
    }

    /// `GET /files/{dir}/`: a folder of the workspace (`dir` relative to
    /// /workspace, empty for /workspace itself).
    pub async fn list_dir(&self, dir: &str) -> Result<Vec<DirEntry>, HttpError> {
        let mut url = url::Url::parse(&self.file_url(dir)?)
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        // A path that ends in `/` asks for the listing.
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().push("");
        }
        let answer: ListingResponse = self.get_json(url.as_str()).await?;
        Ok(answer.entries)
    }

    /// `DELETE /files/{path}?userId=NAME`: a file, a symlink or a folder
    /// with everything in it; the room's `delete` record names this client.
    pub async fn delete_file(&self, path: &str) -> Result<bool, HttpError> {
        let mut url = url::Url::parse(&self.file_url(path)?)
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        url.query_pairs_mut().append_pair("userId", &self.name);
        let url = url.to_string();
        let text = self.backend.send_text(Method::DELETE, &url, None).await?;
        let answer: DeleteResponse = decode(&url, &text)?;
        Ok(answer.deleted)
    }

    /// The URL of `{room}/{head}/{segments…}`, each segment escaped.
    pub(super) fn segments_url(&self, head: &str, segments: &[&str]) -> Result<String, HttpError> {
        let mut url = url::Url::parse(&self.room_url(head))
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        url.path_segments_mut()
            .map_err(|_| {
                HttpError::Invalid(format!(
                    "server URL {:?} cannot have a path",
                    self.backend.base
                ))
            })?
            .extend(segments);
        Ok(url.to_string())
    }

    async fn get_json<T: DeserializeOwned>(&self, url: &str) -> Result<T, HttpError> {
        let text = self.backend.send_text(Method::GET, url, None).await?;
        decode(url, &text)
    }

    /// `GET /files/{path}`: the bytes of a file of the workspace.
    pub async fn get_file(&self, path: &str) -> Result<bytes::Bytes, HttpError> {
        let url = self.file_url(path)?;
        self.backend.send(Method::GET, &url, None).await
    }

    /// `PUT /files/{path}?userId=NAME`: writes a file of the workspace
    /// (parents made); the room's `upload` record names this client.
    pub async fn put_file(&self, path: &str, bytes: Vec<u8>) -> Result<FileResponse, HttpError> {
        let mut url = url::Url::parse(&self.file_url(path)?)
            .map_err(|err| HttpError::Invalid(err.to_string()))?;
        url.query_pairs_mut().append_pair("userId", &self.name);
        let url = url.to_string();
        let answer = self
            .backend
            .send(Method::PUT, &url, Some(("application/octet-stream", bytes)))
            .await?;
        decode(&url, &String::from_utf8_lossy(&answer))
    }
}
