//! Reading dbgen `.tbl` files (`|`-separated, a trailing `|`) into ripple
//! rows, each value read from its text as an `INSERT` of a quoted literal
//! would be (the cast to the column's type, type modifiers included), and
//! writing them from the harness's generator.
//!
//! Owns: the `.tbl` format. Must not: schedule or time anything.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use ripple::repr::{Datum, RelationDesc, Row};

/// Every row of the `.tbl` file at `path`, for a table of columns `desc`.
pub fn read(path: &Path, desc: &RelationDesc) -> Result<Vec<Row>> {
    let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut rows = Vec::new();
    let mut datums = Vec::with_capacity(desc.arity());
    for (n, line) in BufReader::new(file).lines().enumerate() {
        let line = line.with_context(|| format!("read {}", path.display()))?;
        let line = line.strip_suffix('|').unwrap_or(&line);
        datums.clear();
        for (i, field) in line.split('|').enumerate() {
            let Some(ty) = desc.types.get(i) else {
                bail!("{}:{}: more than {} fields", path.display(), n + 1, desc.arity());
            };
            let value = ripple::expr::func::cast(Datum::Text(field.to_string()), &ty.scalar, false)
                .map_err(|e| anyhow!("{}:{} field {}: {e}", path.display(), n + 1, i + 1))?;
            datums.push(value);
        }
        if datums.len() != desc.arity() {
            bail!("{}:{}: {} fields, the table has {}", path.display(), n + 1, datums.len(), desc.arity());
        }
        rows.push(Row::pack(&datums));
    }
    Ok(rows)
}

/// Writes table `name` at `scale_factor` from the harness's generator
/// (tpchgen, as dbgen) to `dir/<name>.tbl`. Returns the number of rows.
pub fn write(name: &str, scale_factor: f64, dir: &Path) -> Result<usize> {
    let path = dir.join(format!("{name}.tbl"));
    let tmp = dir.join(format!("{name}.tbl.part"));
    let mut out = BufWriter::new(File::create(&tmp).with_context(|| format!("create {}", tmp.display()))?);
    let rows = ripple_tpch::data::for_each_row(name, scale_factor, |line| {
        for field in line.split('\t') {
            out.write_all(field.as_bytes())?;
            out.write_all(b"|")?;
        }
        out.write_all(b"\n")?;
        Ok(())
    })?;
    out.flush()?;
    drop(out);
    std::fs::rename(&tmp, &path).with_context(|| format!("rename {} to {}", tmp.display(), path.display()))?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::TpchCatalog;

    #[test]
    fn writes_and_reads_a_table() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ripple-tbl-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let n = write("nation", 0.01, &dir)?;
        let text = std::fs::read_to_string(dir.join("nation.tbl"))?;
        assert_eq!(n, 25);
        assert!(text.starts_with("0|ALGERIA|0|"), "{}", &text[..40]);
        let catalog = TpchCatalog::new(
            "CREATE TABLE nation (n_nationkey integer NOT NULL, n_name char(25) NOT NULL, n_regionkey integer, n_comment varchar(152));",
        )?;
        let (_, desc) = catalog.table("nation").context("nation")?;
        let rows = read(&dir.join("nation.tbl"), desc)?;
        assert_eq!(rows.len(), 25);
        let first = rows[0].unpack();
        assert_eq!(first[0], Datum::Int32(0));
        // char(25) is padded as an INSERT pads it.
        assert_eq!(first[1], Datum::Text(format!("{:<25}", "ALGERIA")));
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
