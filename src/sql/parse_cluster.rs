//! Parsing `ALTER CLUSTER`: moving the bins of keyed state between the
//! workers (`dataflow/bins.rs`, `coord/rebalance.rs`).
//!
//! ```text
//! ALTER CLUSTER name REBALANCE [WITH (option = value, ...)]
//! ALTER CLUSTER name MOVE BINS (bin, ...) TO WORKER worker [WITH (...)]
//! ```
//!
//! Options: `strategy = 'batched' | 'all_at_once'`, `batch = n` (bins per
//! step of a batched migration). sqlparser reads Snowflake's and others'
//! `ALTER CLUSTER` forms, not these.
//!
//! Owns: the statement's syntax and its display. Must not: check the
//! options' values or the bins (binding does).

use sqlparser::ast::Ident;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;
use std::fmt;

/// What an `ALTER CLUSTER` does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterAction {
    /// Moves bins so that the workers' loads even out.
    Rebalance,
    /// Moves the given bins to one worker.
    MoveBins { bins: Vec<u64>, worker: u64 },
}

/// `ALTER CLUSTER name action [WITH (options)]`; option values as written
/// (a string literal's contents, or a number or word).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlterCluster {
    pub name: Ident,
    pub action: ClusterAction,
    pub options: Vec<(Ident, String)>,
}

fn is_word(t: &Token, word: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

fn number(p: &mut Parser) -> Result<u64, ParserError> {
    p.parse_literal_uint()
}

/// The statement, if `p` is at `ALTER CLUSTER` (nothing consumed if not).
pub fn statement(p: &mut Parser) -> Result<Option<AlterCluster>, ParserError> {
    if !(p.peek_keyword(Keyword::ALTER) && is_word(&p.peek_nth_token_ref(1).token, "cluster")) {
        return Ok(None);
    }
    p.next_token();
    p.next_token();
    let name = p.parse_identifier()?;
    let action = if is_word(&p.peek_token_ref().token, "rebalance") {
        p.next_token();
        ClusterAction::Rebalance
    } else if is_word(&p.peek_token_ref().token, "move") {
        p.next_token();
        if !is_word(&p.peek_token_ref().token, "bins") && !is_word(&p.peek_token_ref().token, "bin") {
            return p.expected_ref("BINS", p.peek_token_ref());
        }
        p.next_token();
        let bins = if p.consume_token(&Token::LParen) {
            let bins = p.parse_comma_separated(number)?;
            p.expect_token(&Token::RParen)?;
            bins
        } else {
            vec![number(p)?]
        };
        p.expect_keyword(Keyword::TO)?;
        if !is_word(&p.peek_token_ref().token, "worker") {
            return p.expected_ref("WORKER", p.peek_token_ref());
        }
        p.next_token();
        ClusterAction::MoveBins { bins, worker: number(p)? }
    } else {
        return p.expected_ref("REBALANCE or MOVE BINS", p.peek_token_ref());
    };
    let mut options = Vec::new();
    if p.parse_keyword(Keyword::WITH) {
        p.expect_token(&Token::LParen)?;
        loop {
            let key = p.parse_identifier()?;
            p.expect_token(&Token::Eq)?;
            let token = p.next_token();
            let value = match token.token {
                Token::SingleQuotedString(s) => s,
                Token::Number(n, _) => n,
                Token::Word(w) => w.value,
                _ => return p.expected("a value", token),
            };
            options.push((key, value));
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        p.expect_token(&Token::RParen)?;
    }
    Ok(Some(AlterCluster { name, action, options }))
}

impl fmt::Display for AlterCluster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER CLUSTER {} ", self.name)?;
        match &self.action {
            ClusterAction::Rebalance => write!(f, "REBALANCE")?,
            ClusterAction::MoveBins { bins, worker } => {
                let bins: Vec<String> = bins.iter().map(|b| b.to_string()).collect();
                write!(f, "MOVE BINS ({}) TO WORKER {worker}", bins.join(", "))?;
            }
        }
        if !self.options.is_empty() {
            let options: Vec<String> = self
                .options
                .iter()
                .map(|(k, v)| format!("{k} = {}", sqlparser::ast::Value::SingleQuotedString(v.clone())))
                .collect();
            write!(f, " WITH ({})", options.join(", "))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::sql::parse::{parse, Stmt};

    fn one(sql: &str) -> super::AlterCluster {
        match parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}")).remove(0) {
            Stmt::AlterCluster(a) => a,
            other => panic!("{sql}: {other:?}"),
        }
    }

    #[test]
    fn the_two_forms_parse_and_print_back() {
        let a = one("ALTER CLUSTER default REBALANCE");
        assert_eq!(a.action, super::ClusterAction::Rebalance);
        let b = one("alter cluster default move bins (1, 2, 255) to worker 1 with (strategy = 'all_at_once', batch = 4);");
        assert_eq!(b.action, super::ClusterAction::MoveBins { bins: vec![1, 2, 255], worker: 1 });
        assert_eq!(b.options.len(), 2);
        for stmt in [a, b] {
            assert_eq!(one(&stmt.to_string()), stmt);
        }
        assert_eq!(one("ALTER CLUSTER default MOVE BIN 7 TO WORKER 0").action, super::ClusterAction::MoveBins { bins: vec![7], worker: 0 });
    }

    #[test]
    fn malformed_statements_are_syntax_errors() {
        for sql in [
            "ALTER CLUSTER",
            "ALTER CLUSTER default",
            "ALTER CLUSTER default SPIN",
            "ALTER CLUSTER default MOVE BINS (1 TO WORKER 1",
            "ALTER CLUSTER default MOVE BINS (-1) TO WORKER 1",
            "ALTER CLUSTER default MOVE BINS (1) TO 1",
            "ALTER CLUSTER default REBALANCE WITH (batch)",
            "ALTER CLUSTER default REBALANCE WITH (batch = 4",
        ] {
            assert!(parse(sql).is_err(), "{sql}");
        }
    }
}
