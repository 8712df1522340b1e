//! The idle-in-transaction timeout (`idle_in_transaction_session_timeout`):
//! a session that leaves a transaction block open and sends nothing for
//! longer than its setting is ended, as in PostgreSQL, so that an idle
//! client cannot hold its key locks and the write token forever.
//!
//! The connection arms the watch when it sends ReadyForQuery with the
//! session in a block (`arm`: the end of a simple query, Sync, the end of
//! a COPY) and disarms it when the client's next message arrives
//! (`disarm`: Query, Parse, Bind, Describe, Execute, Close). The
//! connection's task races the protocol loop against `expired`
//! (`serve_listener`) and, when the watch wins, drops the loop (and with
//! it the session, which rolls the block back and lets its locks go),
//! sends FATAL 25P03 and closes the socket.
//!
//! Owns: the deadline and the termination message. Must not: read settings
//! (the connection passes the timeout) or touch the session.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::BytesMut;
use pgwire::messages::PgWireBackendMessage;

/// The deadline of one connection's idle-in-transaction timeout.
#[derive(Debug, Default)]
pub struct IdleWatch {
    deadline: Mutex<Option<Instant>>,
    changed: tokio::sync::Notify,
}

impl IdleWatch {
    pub fn new() -> Arc<IdleWatch> {
        Arc::new(IdleWatch::default())
    }

    fn set(&self, deadline: Option<Instant>) {
        let mut current = self.deadline.lock().unwrap_or_else(|p| p.into_inner());
        if *current != deadline {
            *current = deadline;
            self.changed.notify_one();
        }
    }

    fn get(&self) -> Option<Instant> {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session waits for its client inside a transaction block, for at
    /// most `timeout` (`None`: no limit).
    pub fn arm(&self, timeout: Option<Duration>) {
        self.set(timeout.map(|t| Instant::now() + t));
    }

    /// A message came: the session is not idle.
    pub fn disarm(&self) {
        self.set(None);
    }

    /// Resolves once the watch stays armed past its deadline.
    pub async fn expired(&self) {
        loop {
            // Registered before the deadline is read: a change after the
            // read wakes this wait (Notify keeps one permit).
            let changed = self.changed.notified();
            match self.get() {
                None => changed.await,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline.into()) => {
                            if self.get().is_some_and(|d| d <= Instant::now()) {
                                return;
                            }
                        }
                        () = changed => {}
                    }
                }
            }
        }
    }
}

/// Sends FATAL 25P03 on `socket` (a duplicate of the connection's socket,
/// whose protocol loop has been dropped) and closes it. Best effort: the
/// client may be gone already.
pub fn terminate(mut socket: std::net::TcpStream) {
    let mut info = pgwire::error::ErrorInfo::new(
        "FATAL".to_string(),
        "25P03".to_string(),
        "terminating connection due to idle-in-transaction timeout".to_string(),
    );
    info.severity_nonlocalized = Some("FATAL".to_string());
    let mut buf = BytesMut::new();
    if PgWireBackendMessage::ErrorResponse(info.into()).encode(&mut buf).is_ok() {
        // The socket is non-blocking (it shares the loop's file status);
        // a message this small fits the send buffer of a live connection.
        let _ = socket.write_all(&buf);
    }
    let _ = socket.shutdown(std::net::Shutdown::Both);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fires_only_while_armed_past_the_deadline() {
        let watch = IdleWatch::new();
        // Disarmed: never fires.
        assert!(tokio::time::timeout(Duration::from_millis(50), watch.expired()).await.is_err());
        // Armed, then disarmed before the deadline: does not fire.
        watch.arm(Some(Duration::from_millis(60)));
        let w = watch.clone();
        let waiter = tokio::spawn(async move { w.expired().await });
        tokio::time::sleep(Duration::from_millis(20)).await;
        watch.disarm();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(!waiter.is_finished());
        // Armed again: fires after the deadline.
        let started = Instant::now();
        watch.arm(Some(Duration::from_millis(40)));
        tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap();
        assert!(started.elapsed() >= Duration::from_millis(40));
        // Armed with no limit: does not fire.
        watch.arm(None);
        assert!(tokio::time::timeout(Duration::from_millis(50), watch.expired()).await.is_err());
    }
}
