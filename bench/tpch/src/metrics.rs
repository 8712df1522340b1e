//! Memory of the views as the server reports it: `SHOW ARRANGEMENT_SIZES`
//! (every arrangement of an item's dataflow: records counted by the
//! workers, bytes exact for the exported arrangement and estimated for
//! internal ones), or on servers without it the sum of `SHOW ARRANGEMENTS`
//! per item.

use std::collections::BTreeMap;

use serde::Serialize;
use tokio_postgres::Client;

use crate::verify::read_text;

/// The arrangements of one item.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ArrangementSize {
    /// Non-empty arrangements of the item's dataflow.
    pub arrangements: i64,
    /// Records in all of them.
    pub records: i64,
    /// Bytes of all of them (exact for the exported arrangement, estimated
    /// for internal ones).
    pub bytes: i64,
    /// Exact records and bytes of the arrangement the view exports.
    pub exported_records: i64,
    pub exported_bytes: i64,
}

fn int(s: &str) -> i64 {
    s.trim().parse().unwrap_or(0)
}

/// Sizes by item name, or `None` if the server reports neither form.
pub async fn arrangement_sizes(client: &Client) -> Option<BTreeMap<String, ArrangementSize>> {
    // A server without it answers with a setting of that name (one column).
    let sizes = read_text(client, "SHOW ARRANGEMENT_SIZES")
        .await
        .and_then(|rows| match rows.iter().any(|r| r.len() < 6) {
            true => Err(anyhow::anyhow!("SHOW ARRANGEMENT_SIZES is not supported")),
            false => Ok(rows),
        });
    match sizes {
        Ok(rows) => Some(
            rows.into_iter()
                .map(|r| {
                    let size = ArrangementSize {
                        arrangements: int(&r[1]),
                        records: int(&r[2]),
                        bytes: int(&r[3]),
                        exported_records: int(&r[4]),
                        exported_bytes: int(&r[5]),
                    };
                    (r[0].clone(), size)
                })
                .collect(),
        ),
        Err(e) => {
            tracing::debug!(error = %e, "SHOW ARRANGEMENT_SIZES failed; trying SHOW ARRANGEMENTS");
            let rows = match read_text(client, "SHOW ARRANGEMENTS").await {
                Ok(rows) => rows,
                Err(e) => {
                    tracing::warn!(error = %e, "the server reports no arrangement sizes");
                    return None;
                }
            };
            let mut out: BTreeMap<String, ArrangementSize> = BTreeMap::new();
            for r in rows.iter().filter(|r| r.len() >= 3) {
                let e = out.entry(r[0].clone()).or_default();
                e.arrangements += 1;
                e.records += int(&r[2]);
                e.exported_records += int(&r[2]);
                if let Some(b) = r.get(3) {
                    e.bytes += int(b);
                    e.exported_bytes += int(b);
                }
            }
            Some(out)
        }
    }
}
