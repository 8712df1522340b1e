//! Keeping the compute cluster serving: when the workers run in `ripple
//! compute` processes and one is lost, a new cluster is started and given
//! everything again while the server stays up (docs/cluster.md).
//!
//! The dataflow client replays the tables and dataflows in force to the
//! new cluster (`DataflowClient::start_replacement` and `install`, its
//! journal). This module then pauses writes (COPY feeds, then the write
//! token, alone) and sends every table's
//! contents, read from storage without writing anything
//! (`Storage::read_contents`), at one timestamp `T`: the durable
//! timestamp, through which every acknowledged write is stored. The views
//! are rebuilt from them. A read at a timestamp before `T` (a transaction
//! that fixed its snapshot before the loss) would find the new
//! arrangements empty there, so it fails with 40001 instead (`check`):
//! the client retries. Reads waiting on the lost cluster have already
//! failed with an error that names the loss; subscriptions end.
//!
//! If no new cluster can be started, or writes do not pause, the server
//! is told to restart itself (main.rs), which recovers as after a crash.
//!
//! Owns: the rehydration sequence and the rehydration timestamp. Must not:
//! talk to the processes (`dataflow::cluster`).

use super::{Coordinator, State};
use crate::dataflow::Command;
use crate::repr::{Diff, Error, GlobalId, Row, Timestamp};
use crate::sql::ItemKind;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long the rehydration waits for the writes in progress (an open
/// transaction block holds the write token until it ends).
const WRITES_PAUSE_WAIT: Duration = Duration::from_secs(30);

impl Coordinator {
    /// Runs for the server's life when the workers are a cluster: each
    /// loss is answered with a new cluster; if that fails, with
    /// `unrecoverable`.
    pub(super) async fn keep_compute(&self) {
        let mut lost = self.dataflow.lost();
        loop {
            let why = match lost.wait_for(|l| l.is_some()).await {
                Ok(why) => why.clone().unwrap_or_default(),
                Err(_) => return,
            };
            let started = Instant::now();
            match self.rehydrate().await {
                Ok(at) => tracing::info!(
                    elapsed_ms = started.elapsed().as_millis() as u64,
                    at,
                    "a new compute cluster serves: every table and view was given to it again"
                ),
                Err(e) => {
                    tracing::error!(error = %e, "no new compute cluster could be made to serve");
                    self.unrecoverable.send_replace(Some(format!("{why}; then: {e}")));
                    return;
                }
            }
        }
    }

    /// Starts a new cluster and gives it every table's contents at the
    /// durable timestamp, which it returns.
    async fn rehydrate(&self) -> Result<Timestamp, Error> {
        // (A loss during a restart's own loading: the load goes on to the
        // lost cluster, then this one is given the tables as they are.)
        self.wait_ready().await?;
        // The new cluster starts without holding anything up; writes fail
        // meanwhile (their key checks and reads reach no worker).
        let dataflow = Arc::clone(&self.dataflow);
        let fresh = tokio::task::spawn_blocking(move || dataflow.start_replacement())
            .await
            .map_err(|e| Error::Internal(format!("starting a new cluster: {e}")))?
            .map_err(Error::Internal)?;
        // (Dropping `fresh` on the way out stops it.) A COPY still handing
        // its committed rows to the lost cluster finishes first (its rows
        // are in storage, read below), then no write is in progress.
        let paused = tokio::time::timeout(WRITES_PAUSE_WAIT, async {
            let feeds = self.load_feed.lock().await;
            (feeds, self.write_token.write().await)
        });
        let _paused = paused
            .await
            .map_err(|_| Error::Internal(format!("writes in progress did not end within {WRITES_PAUSE_WAIT:?}")))?;
        let mut st = self.state.lock().await;
        self.dataflow.install(fresh);
        // Every acknowledged write is durable (writers hold the token
        // until acknowledged), and nothing commits while it is held here.
        let at = self.commits.durable_ts().max(st.compaction_frontier());
        let tables: Vec<GlobalId> = st.catalog.items.values().filter(|i| i.kind == ItemKind::Table).map(|i| i.id).collect();
        let storage = Arc::clone(&st.storage);
        let contents = tokio::task::spawn_blocking(move || -> Result<Vec<(GlobalId, Vec<(Row, Diff)>)>, Error> {
            tables.into_iter().map(|t| Ok((t, storage.read_contents(t, at)?))).collect()
        })
        .await
        .map_err(|e| Error::Internal(format!("reading the tables: {e}")))??;
        self.dataflow.broadcast(Command::Advance { time: at, updates: Arc::new(contents) });
        st.rehydrated_at = at;
        // Retained history starts again here too.
        for (_, from) in st.retention.values_mut() {
            *from = (*from).max(at);
        }
        st.compacted_to.fetch_max(at, std::sync::atomic::Ordering::SeqCst);
        self.dataflow.broadcast(Command::AllowCompaction { time: at });
        // The new workers hold no view's last checkpoint: the next one of
        // each is whole.
        st.incremental.clear();
        Ok(at)
    }
}

impl State {
    /// Fails (40001) a read at `ts` from before the cluster was last
    /// rehydrated: the new cluster's arrangements start there.
    pub(super) fn check_rehydrated(&self, ts: Timestamp) -> Result<(), Error> {
        if ts < self.rehydrated_at {
            return Err(Error::SerializationFailure(
                "could not serialize access: the compute cluster was restarted after this transaction's snapshot; retry the transaction"
                    .into(),
            ));
        }
        Ok(())
    }
}
