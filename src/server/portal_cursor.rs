//! Protocol portals as cursors. PostgreSQL keeps the portals a client
//! binds with the extended protocol and the cursors `DECLARE` opens in one
//! namespace, so `MOVE [FORWARD] n portal` moves a bound portal (asyncpg's
//! `Cursor.forward` does exactly this before fetching with Execute). A
//! portal not run yet is run first; moving skips its next rows, so the
//! next Execute continues after them. Portals, like PostgreSQL's, only
//! move forward; a SQL cursor of the same name comes first.
//!
//! Owns: `MOVE` on protocol portals. Must not: run anything but the
//! portal's own statement (`Connection::execute_portal`).

use pgwire::api::ClientInfo;
use pgwire::api::portal::PortalExecutionState;
use pgwire::api::results::Response;
use futures::StreamExt;

use super::connection::Connection;
use super::portal::{portal_outcome, PortalOutcome};
use crate::coord::ExecuteResponse;
use crate::repr::Error;
use crate::sql::{FetchDirection, Stmt};

impl Connection {
    /// `MOVE` or `FETCH` naming a bound portal (and no SQL cursor): the
    /// result and whether the session is in a transaction block; `None`
    /// for any other statement.
    pub(super) async fn move_portal<C>(&self, client: &mut C, stmt: &Stmt) -> Option<(Result<ExecuteResponse, Error>, bool)>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        let Stmt::Fetch { cursor, direction, move_only, timeout: None } = stmt else { return None };
        let in_transaction = {
            let session = self.session.lock().await;
            if session.cursors.contains_key(cursor) {
                return None;
            }
            session.in_transaction
        };
        let portal = self.portals.lock().await.get(cursor).cloned()?;
        if !move_only {
            let e = Error::FeatureNotSupported(format!(
                "FETCH from the protocol-level portal \"{cursor}\" is not supported; fetch its rows with Execute"
            ));
            return Some((Err(e), in_transaction));
        }
        let count = match direction {
            FetchDirection::Forward(n) => n.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            FetchDirection::Relative(k) if *k >= 0 => usize::try_from(*k).unwrap_or(usize::MAX),
            FetchDirection::Backward(_) | FetchDirection::Relative(_) | FetchDirection::Absolute(_) => {
                let e = Error::ObjectNotInPrerequisiteState("cursor can only scan forward".into());
                return Some((Err(e), in_transaction));
            }
        };
        let state = portal.state();
        let mut state = state.lock().await;
        if matches!(*state, PortalExecutionState::Initial) {
            let prev = client.transaction_status();
            let (result, in_transaction) = self.execute_portal(&portal).await;
            client.set_transaction_status(super::connection::status_after(prev, in_transaction, result.is_err()));
            let response = match result {
                Ok(r) => r,
                Err(e) => return Some((Err(e), in_transaction)),
            };
            *state = match portal_outcome(response, &portal) {
                Ok(PortalOutcome::Response(Response::Query(rows))) => PortalExecutionState::Suspended(rows),
                Ok(_) => PortalExecutionState::Finished,
                Err(e) => return Some((Err(Error::Internal(format!("portal \"{cursor}\": {e}"))), in_transaction)),
            };
        }
        let mut moved = 0u64;
        if let PortalExecutionState::Suspended(rows) = &mut *state {
            while (moved as usize) < count {
                match rows.data_rows().next().await {
                    Some(Ok(_)) => moved += 1,
                    Some(Err(e)) => return Some((Err(Error::Internal(format!("portal \"{cursor}\": {e}"))), in_transaction)),
                    None => break,
                }
            }
        }
        Some((Ok(ExecuteResponse::Command { tag: "MOVE".into(), rows: Some(moved) }), in_transaction))
    }
}
