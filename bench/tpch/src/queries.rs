//! The 22 TPC-H queries of `<tpch-dir>/queries/qNN.sql` as the harness
//! uses them: the text without comments (Q11's fraction scaled to the scale
//! factor, as its comment says), the view definition, the final ORDER BY
//! (to read a view in the query's order and compare it with the answer),
//! and the relations each query reads (which of the streamed tables it
//! sees change).

use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result, bail};
use rust_decimal::Decimal;

use crate::data::TABLES;

/// One item of the final ORDER BY: a column of the query's output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderKey {
    pub column: String,
    pub desc: bool,
}

/// A query as the harness runs it.
#[derive(Clone, Debug)]
pub struct Query {
    pub number: usize,
    /// The query text, without comments or a trailing semicolon.
    pub text: String,
    /// The final ORDER BY, if any.
    pub order_by: Vec<OrderKey>,
    /// The final LIMIT, if any.
    pub limit: Option<usize>,
    /// Byte offset of the final ORDER BY in `text` (where a view definition
    /// without ordering ends).
    order_by_at: Option<usize>,
    /// The TPC-H tables the query reads.
    pub relations: Vec<&'static str>,
}

impl Query {
    /// The view's name: `q01` ... `q22`.
    pub fn view(&self) -> String {
        format!("q{:02}", self.number)
    }

    /// `CREATE MATERIALIZED VIEW qNN AS <query>`, with its ORDER BY/LIMIT
    /// (a maintained top-k) or, with `strip_order`, without them.
    pub fn create_view(&self, strip_order: bool) -> String {
        let body = match (strip_order, self.order_by_at) {
            (true, Some(at)) => self.text[..at].trim_end(),
            _ => self.text.as_str(),
        };
        format!("CREATE MATERIALIZED VIEW {} AS {}", self.view(), body)
    }

    /// Reads the view in the query's order.
    pub fn read_ordered(&self) -> String {
        if self.order_by.is_empty() {
            return format!("SELECT * FROM {}", self.view());
        }
        let keys: Vec<String> =
            self.order_by.iter().map(|k| if k.desc { format!("{} DESC", k.column) } else { k.column.clone() }).collect();
        format!("SELECT * FROM {} ORDER BY {}", self.view(), keys.join(", "))
    }

    /// Whether the query reads `table`.
    pub fn reads(&self, table: &str) -> bool {
        self.relations.contains(&table)
    }
}

/// Parses a scale factor and returns it with its canonical spelling (the
/// answers' directory name: `0.01`, `0.1`, `1`).
pub fn scale_factor(text: &str) -> Result<(f64, String)> {
    let d = Decimal::from_str(text.trim()).with_context(|| format!("scale factor {text:?} is not a number"))?;
    if d <= Decimal::ZERO {
        bail!("scale factor must be positive, not {text}");
    }
    let f: f64 = d.to_string().parse().context("scale factor as a float")?;
    Ok((f, d.normalize().to_string()))
}

/// Q11's fraction at `sf`: 0.0001 / SF.
pub fn q11_fraction(sf: &str) -> Result<String> {
    let sf = Decimal::from_str(sf).with_context(|| format!("scale factor {sf:?}"))?;
    let fraction = Decimal::from_str("0.0001").context("constant")? / sf;
    Ok(fraction.normalize().to_string())
}

/// Reads the queries `numbers` from `<dir>/queries/`.
pub fn load(dir: &Path, numbers: &[usize], sf: &str) -> Result<Vec<Query>> {
    numbers
        .iter()
        .map(|&n| {
            let path = dir.join("queries").join(format!("q{n:02}.sql"));
            let raw = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
            Query::parse(n, &raw, sf).with_context(|| format!("query file {}", path.display()))
        })
        .collect()
}

impl Query {
    /// A query from the text of its file (`sf` scales Q11's fraction).
    pub fn parse(number: usize, raw: &str, sf: &str) -> Result<Query> {
        parse(number, raw, sf)
    }
}

fn parse(number: usize, raw: &str, sf: &str) -> Result<Query> {
    let mut text: String = raw
        .lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .trim_end_matches(';')
        .trim_end()
        .to_string();
    if number == 11 {
        if !text.contains("0.0001") {
            bail!("Q11 has no fraction 0.0001 to scale");
        }
        text = text.replace("0.0001", &q11_fraction(sf)?);
    }
    let upper = text.to_ascii_uppercase();
    let order_by_at = upper.rfind("ORDER BY");
    // The final ORDER BY is the query's only if no closing parenthesis
    // follows it (TPC-H's subqueries have none, but be safe).
    let order_by_at = order_by_at.filter(|&at| !text[at..].contains(')'));
    let (order_by, limit) = match order_by_at {
        None => (Vec::new(), None),
        Some(at) => {
            let rest = &text[at + "ORDER BY".len()..];
            let rest_upper = rest.to_ascii_uppercase();
            let (items, limit) = match rest_upper.find("LIMIT") {
                Some(l) => {
                    let n: usize = rest[l + "LIMIT".len()..].trim().parse().context("LIMIT is not a number")?;
                    (&rest[..l], Some(n))
                }
                None => (rest, None),
            };
            let keys = items
                .split(',')
                .map(|item| {
                    let words: Vec<&str> = item.split_whitespace().collect();
                    match words.as_slice() {
                        [c] => Ok(OrderKey { column: c.to_string(), desc: false }),
                        [c, dir] if dir.eq_ignore_ascii_case("asc") => Ok(OrderKey { column: c.to_string(), desc: false }),
                        [c, dir] if dir.eq_ignore_ascii_case("desc") => Ok(OrderKey { column: c.to_string(), desc: true }),
                        _ => bail!("cannot read ORDER BY item {item:?}"),
                    }
                })
                .collect::<Result<Vec<_>>>()?;
            (keys, limit)
        }
    };
    let words: Vec<String> = text
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let relations = TABLES.iter().map(|(name, _)| *name).filter(|name| words.iter().any(|w| w == name)).collect();
    Ok(Query { number, text, order_by, limit, order_by_at, relations })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_by_limit_and_relations() {
        let q = parse(
            3,
            "-- c\nSELECT l_orderkey, sum(x) AS revenue FROM customer, orders, lineitem\nGROUP BY l_orderkey\nORDER BY revenue DESC, o_orderdate\nLIMIT 10;\n",
            "0.1",
        )
        .expect("parse");
        assert_eq!(q.limit, Some(10));
        assert_eq!(
            q.order_by,
            vec![OrderKey { column: "revenue".into(), desc: true }, OrderKey { column: "o_orderdate".into(), desc: false }]
        );
        assert_eq!(q.relations, vec!["customer", "orders", "lineitem"]);
        assert!(q.create_view(true).ends_with("GROUP BY l_orderkey"));
        assert_eq!(q.read_ordered(), "SELECT * FROM q03 ORDER BY revenue DESC, o_orderdate");
    }

    #[test]
    fn q11_scales_with_the_scale_factor() {
        assert_eq!(q11_fraction("0.01").expect("sf"), "0.01");
        assert_eq!(q11_fraction("0.1").expect("sf"), "0.001");
        assert_eq!(q11_fraction("1").expect("sf"), "0.0001");
        assert_eq!(scale_factor("0.10").expect("sf").1, "0.1");
    }

    #[test]
    fn part_is_not_partsupp() {
        let q = parse(11, "SELECT 1 FROM partsupp, supplier WHERE x > 0.0001", "1").expect("parse");
        assert_eq!(q.relations, vec!["supplier", "partsupp"]);
    }
}
