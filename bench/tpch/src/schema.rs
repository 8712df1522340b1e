//! The TPC-H schema of `<tpch-dir>/schema.sql`, split into its statements
//! so that single tables can be created again (the streamed tables start
//! empty for every stream).

use std::path::Path;

use anyhow::{Context, Result};

/// The statements of `schema.sql`.
#[derive(Clone, Debug)]
pub struct Schema {
    pub statements: Vec<String>,
}

impl Schema {
    pub fn load(dir: &Path) -> Result<Schema> {
        let path = dir.join("schema.sql");
        let text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
        Ok(Schema::parse(&text))
    }

    pub fn parse(text: &str) -> Schema {
        let without_comments: String =
            text.lines().map(|l| l.split("--").next().unwrap_or("")).collect::<Vec<_>>().join("\n");
        let statements = without_comments
            .split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        Schema { statements }
    }

    /// The `CREATE TABLE` statement of `table`.
    pub fn create_table(&self, table: &str) -> Option<String> {
        self.statements
            .iter()
            .find(|s| {
                let words: Vec<String> = s.split_whitespace().take(3).map(|w| w.to_ascii_lowercase()).collect();
                words.len() == 3
                    && words[0] == "create"
                    && words[1] == "table"
                    && words[2].trim_end_matches('(') == table
            })
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_tables() {
        let s = Schema::parse("-- x\nCREATE TABLE a (x int); -- y\nCREATE TABLE b(\n y int -- z\n);\n");
        assert_eq!(s.statements.len(), 2);
        assert_eq!(s.create_table("a").as_deref(), Some("CREATE TABLE a (x int)"));
        assert!(s.create_table("b").is_some_and(|c| c.contains("y int")));
        assert!(s.create_table("c").is_none());
    }
}
