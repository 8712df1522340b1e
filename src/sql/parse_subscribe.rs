//! Parsing `SUBSCRIBE` in Materialize's form, which sqlparser does not
//! know, and the three ways to read one:
//!
//! ```text
//! SUBSCRIBE [TO] name | (query) [WITH (option [= value], ...)]
//!     [AS OF [AT LEAST] expr] [UP TO expr]
//! COPY (SUBSCRIBE ...) TO STDOUT [[WITH] (copy options)]
//! DECLARE name CURSOR [WITHOUT HOLD] FOR SUBSCRIBE ...
//! ```
//!
//! And a query read at a past time, `query AS OF expr` (`Stmt::AsOf`).
//!
//! Owns: the syntax of these statements. Must not: bind them (the binder
//! resolves the relation and evaluates the options and timestamps).

use super::parse::Stmt;
use sqlparser::ast::{CopyLegacyOption, CopyOption, Expr, Ident, ObjectName, Query, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan};
use std::fmt;

/// What a `SUBSCRIBE` reads.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    Name(ObjectName),
    Query(Box<Query>),
}

/// A `SUBSCRIBE` statement.
#[derive(Clone, Debug, PartialEq)]
pub struct Subscribe {
    pub target: Target,
    /// `WITH (SNAPSHOT = false, PROGRESS)`: names as written, values if
    /// given.
    pub options: Vec<(Ident, Option<Expr>)>,
    pub as_of: Option<Expr>,
    /// `AS OF AT LEAST`: the given time or the earliest readable one after
    /// it.
    pub at_least: bool,
    pub up_to: Option<Expr>,
}

/// How a `SUBSCRIBE`'s rows reach the client.
#[derive(Clone, Debug, PartialEq)]
pub enum Output {
    /// As the rows of the statement itself.
    Rows,
    /// As `COPY ... TO STDOUT` data, with these options.
    Copy { options: Vec<CopyOption>, legacy: Vec<CopyLegacyOption> },
    /// Into a cursor of this name (case-folded), read with `FETCH`.
    Cursor { name: String },
}

/// The statements of this module, if `p` is at one (nothing consumed
/// otherwise).
pub fn statement(p: &mut Parser) -> Result<Option<Stmt>, ParserError> {
    if is_word(&p.peek_token_ref().token, "subscribe") {
        p.next_token();
        let sub = subscribe(p)?;
        return Ok(Some(Stmt::Subscribe { sub: Box::new(sub), output: Output::Rows }));
    }
    if p.peek_keyword(Keyword::COPY)
        && p.peek_nth_token_ref(1).token == Token::LParen
        && is_word(&p.peek_nth_token_ref(2).token, "subscribe")
    {
        for _ in 0..3 {
            p.next_token();
        }
        let sub = subscribe(p)?;
        p.expect_token(&Token::RParen)?;
        p.expect_keyword(Keyword::TO)?;
        let target = p.next_token();
        if !is_word(&target.token, "stdout") {
            return p.expected("STDOUT (a SUBSCRIBE is copied to the client only)", target);
        }
        let (options, legacy) = copy_options(p)?;
        return Ok(Some(Stmt::Subscribe { sub: Box::new(sub), output: Output::Copy { options, legacy } }));
    }
    if p.peek_keyword(Keyword::DECLARE) {
        // DECLARE name [NO SCROLL] CURSOR [WITHOUT HOLD] FOR SUBSCRIBE.
        let words: Vec<Token> = (1..10).map(|i| p.peek_nth_token_ref(i).token.clone()).collect();
        let mut i = 1;
        if is_keyword(&words[i], Keyword::NO) && is_keyword(&words[i + 1], Keyword::SCROLL) {
            i += 2;
        }
        if !is_keyword(&words[i], Keyword::CURSOR) {
            return Ok(None);
        }
        i += 1;
        if is_keyword(&words[i], Keyword::WITHOUT) && is_keyword(&words[i + 1], Keyword::HOLD) {
            i += 2;
        }
        if !(is_keyword(&words[i], Keyword::FOR) && is_word(&words[i + 1], "subscribe")) {
            return Ok(None);
        }
        p.next_token();
        let name = super::binder_names::ident(&p.parse_identifier()?);
        for _ in 0..i + 1 {
            p.next_token();
        }
        let sub = subscribe(p)?;
        return Ok(Some(Stmt::Subscribe { sub: Box::new(sub), output: Output::Cursor { name } }));
    }
    Ok(None)
}

/// The rest of a `SUBSCRIBE` after its keyword.
fn subscribe(p: &mut Parser) -> Result<Subscribe, ParserError> {
    let _ = p.parse_keyword(Keyword::TO);
    let target = if p.consume_token(&Token::LParen) {
        let q = p.parse_query()?;
        p.expect_token(&Token::RParen)?;
        Target::Query(q)
    } else {
        Target::Name(p.parse_object_name(false)?)
    };
    let mut options = Vec::new();
    if p.parse_keyword(Keyword::WITH) {
        p.expect_token(&Token::LParen)?;
        loop {
            let name = p.parse_identifier()?;
            let value = if p.consume_token(&Token::Eq) {
                Some(p.parse_expr()?)
            } else if matches!(p.peek_token_ref().token, Token::Comma | Token::RParen) {
                None
            } else {
                Some(p.parse_expr()?)
            };
            options.push((name, value));
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
        p.expect_token(&Token::RParen)?;
    }
    let mut as_of = None;
    let mut at_least = false;
    if p.parse_keywords(&[Keyword::AS, Keyword::OF]) {
        if p.peek_keyword(Keyword::AT) && is_word(&p.peek_nth_token_ref(1).token, "least") {
            p.next_token();
            p.next_token();
            at_least = true;
        }
        as_of = Some(p.parse_expr()?);
    }
    let mut up_to = None;
    if is_word(&p.peek_token_ref().token, "up") && is_keyword(&p.peek_nth_token_ref(1).token, Keyword::TO) {
        p.next_token();
        p.next_token();
        up_to = Some(p.parse_expr()?);
    }
    Ok(Subscribe { target, options, as_of, at_least, up_to })
}

/// `COPY`'s options after `TO STDOUT`, as sqlparser reads them for a
/// `COPY t TO STDOUT ...` (the statement's remaining tokens, parsed as
/// the options of such a statement).
fn copy_options(p: &mut Parser) -> Result<(Vec<CopyOption>, Vec<CopyLegacyOption>), ParserError> {
    let mut rest: Vec<TokenWithSpan> = Vec::new();
    while !matches!(p.peek_token_ref().token, Token::SemiColon | Token::EOF) {
        rest.push(p.next_token());
    }
    if rest.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let mut tokens: Vec<TokenWithSpan> = [
        Token::make_keyword("COPY"),
        Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
        Token::make_word("subscribe", None),
        Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
        Token::make_keyword("TO"),
        Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
        Token::make_keyword("STDOUT"),
        Token::Whitespace(sqlparser::tokenizer::Whitespace::Space),
    ]
    .into_iter()
    .map(TokenWithSpan::wrap)
    .collect();
    tokens.extend(rest);
    let dialect = PostgreSqlDialect {};
    let mut copy = Parser::new(&dialect).with_tokens_with_locations(tokens);
    match copy.parse_statement()? {
        Statement::Copy { options, legacy_options, .. } => {
            if copy.peek_token_ref().token != Token::EOF {
                return copy.expected_ref("end of statement", copy.peek_token_ref());
            }
            Ok((options, legacy_options))
        }
        _ => Err(ParserError::ParserError("Expected: COPY options".into())),
    }
}

/// `query AS OF expr`, if `p` is at one (nothing consumed otherwise): a
/// statement that starts a query and has `AS OF` outside parentheses,
/// whose text before it is a query and after it an expression. (Anything
/// else, such as a column alias `of`, is left to sqlparser.)
pub fn query_as_of(p: &mut Parser) -> Result<Option<Stmt>, ParserError> {
    let starts_query = match &p.peek_token_ref().token {
        Token::LParen => true,
        Token::Word(w) => matches!(w.keyword, Keyword::SELECT | Keyword::WITH | Keyword::VALUES | Keyword::TABLE),
        _ => false,
    };
    if !starts_query {
        return Ok(None);
    }
    // One pass over the statement's tokens (a huge statement must not
    // cost more than linear time here): the last `AS OF` outside
    // parentheses.
    let first = p.index();
    let mut i = first;
    let mut depth = 0i64;
    let mut previous: Option<usize> = None;
    let mut found = None;
    loop {
        let t = &p.token_at(i).token;
        match t {
            Token::EOF => break,
            Token::SemiColon if depth == 0 => break,
            Token::Whitespace(_) => {
                i += 1;
                continue;
            }
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        if depth == 0 && is_keyword(t, Keyword::OF) {
            if let Some(a) = previous.filter(|&a| is_keyword(&p.token_at(a).token, Keyword::AS)) {
                found = Some((a, i));
            }
        }
        previous = Some(i);
        i += 1;
    }
    let end = i;
    let Some((as_at, of_at)) = found else { return Ok(None) };
    let tokens = |from: usize, to: usize| (from..to).map(|k| p.token_at(k).clone()).collect::<Vec<TokenWithSpan>>();
    let dialect = PostgreSqlDialect {};
    let sub = |tokens: Vec<TokenWithSpan>| {
        Parser::new(&dialect).with_recursion_limit(super::parse::PARSER_RECURSION_LIMIT).with_tokens_with_locations(tokens)
    };
    let mut q = sub(tokens(first, as_at));
    let Ok(query) = q.parse_query() else { return Ok(None) };
    if q.peek_token_ref().token != Token::EOF {
        return Ok(None);
    }
    let mut e = sub(tokens(of_at + 1, end));
    let Ok(as_of) = e.parse_expr() else { return Ok(None) };
    if e.peek_token_ref().token != Token::EOF {
        return Ok(None);
    }
    while p.index() < end && !matches!(p.peek_token_ref().token, Token::SemiColon | Token::EOF) {
        p.next_token();
    }
    Ok(Some(Stmt::AsOf { query, as_of }))
}

/// `SELECT * FROM name`, as the query a `SUBSCRIBE name` reads.
pub fn select_all(name: &ObjectName) -> Result<Query, crate::repr::Error> {
    let sql = format!("SELECT * FROM {name}");
    match super::parse::parse(&sql)?.pop() {
        Some(Stmt::Sql(Statement::Query(q))) => Ok(*q),
        _ => Err(crate::repr::Error::Internal(format!("{sql} did not parse as a query"))),
    }
}

fn is_keyword(t: &Token, keyword: Keyword) -> bool {
    matches!(t, Token::Word(w) if w.keyword == keyword)
}

fn is_word(t: &Token, word: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

impl fmt::Display for Subscribe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SUBSCRIBE ")?;
        match &self.target {
            Target::Name(n) => write!(f, "{n}")?,
            Target::Query(q) => write!(f, "({q})")?,
        }
        if !self.options.is_empty() {
            let opts: Vec<String> = self
                .options
                .iter()
                .map(|(n, v)| match v {
                    Some(v) => format!("{n} = {v}"),
                    None => n.to_string(),
                })
                .collect();
            write!(f, " WITH ({})", opts.join(", "))?;
        }
        if let Some(t) = &self.as_of {
            write!(f, " AS OF {}{t}", if self.at_least { "AT LEAST " } else { "" })?;
        }
        if let Some(t) = &self.up_to {
            write!(f, " UP TO {t}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Output::Rows => Ok(()),
            Output::Copy { options, legacy } => {
                write!(f, " TO STDOUT")?;
                if !options.is_empty() {
                    let o: Vec<String> = options.iter().map(|o| o.to_string()).collect();
                    write!(f, " ({})", o.join(", "))?;
                }
                for l in legacy {
                    write!(f, " {l}")?;
                }
                Ok(())
            }
            Output::Cursor { name } => write!(f, "{}", Ident::with_quote('"', name.as_str())),
        }
    }
}

/// The statement as text (`pg_stat_activity`, `pg_cursors`).
pub fn display(sub: &Subscribe, output: &Output) -> String {
    match output {
        Output::Rows => sub.to_string(),
        Output::Copy { .. } => format!("COPY ({sub}){output}"),
        Output::Cursor { .. } => format!("DECLARE {output} CURSOR FOR {sub}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::parse::parse;

    fn one(sql: &str) -> (Subscribe, Output) {
        let mut stmts = parse(sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
        assert_eq!(stmts.len(), 1, "{sql}");
        match stmts.remove(0) {
            Stmt::Subscribe { sub, output } => (*sub, output),
            other => panic!("{sql}: not a SUBSCRIBE: {other:?}"),
        }
    }

    #[test]
    fn forms_parse() {
        let (s, o) = one("SUBSCRIBE v");
        assert!(matches!(s.target, Target::Name(ref n) if n.to_string() == "v"));
        assert_eq!(o, Output::Rows);
        let (s, _) = one("subscribe to public.v with (snapshot = false, progress) as of 5 up to 10");
        assert_eq!(s.options.len(), 2);
        assert_eq!(s.options[0].0.value, "snapshot");
        assert!(s.options[1].1.is_none());
        assert_eq!(s.as_of.map(|e| e.to_string()), Some("5".into()));
        assert_eq!(s.up_to.map(|e| e.to_string()), Some("10".into()));
        let (s, _) = one("SUBSCRIBE (SELECT a, count(*) FROM t GROUP BY a) AS OF AT LEAST 7");
        assert!(matches!(s.target, Target::Query(_)));
        assert!(s.at_least);
        let (_, o) = one("COPY (SUBSCRIBE t WITH (PROGRESS)) TO STDOUT");
        assert_eq!(o, Output::Copy { options: vec![], legacy: vec![] });
        let (_, o) = one("COPY (SUBSCRIBE t) TO STDOUT WITH (FORMAT csv, HEADER)");
        assert!(matches!(o, Output::Copy { ref options, .. } if options.len() == 2));
        let (_, o) = one("DECLARE C NO SCROLL CURSOR WITHOUT HOLD FOR SUBSCRIBE t");
        assert_eq!(o, Output::Cursor { name: "c".into() });
        // Other statements around it are still read.
        let stmts = parse("BEGIN; DECLARE c CURSOR FOR SUBSCRIBE t; FETCH 1 c").expect("parse");
        assert_eq!(stmts.len(), 3);
        // A cursor over a query is sqlparser's.
        assert!(matches!(&parse("DECLARE c CURSOR FOR SELECT 1").expect("parse")[0], Stmt::Sql(_)));
        // A query at a past time; an alias `of` is still an alias.
        let stmts = parse("SELECT a, count(*) FROM (SELECT 1 AS a) AS x GROUP BY a AS OF 17; SELECT 2 AS of").expect("parse");
        assert!(matches!(&stmts[0], Stmt::AsOf { as_of, .. } if as_of.to_string() == "17"), "{stmts:?}");
        assert!(matches!(&stmts[1], Stmt::Sql(_)), "{stmts:?}");
    }

    #[test]
    fn deep_expressions_are_refused_in_every_form() {
        let deep = format!("{}1", "1+".repeat(crate::sql::expr::MAX_EXPR_DEPTH + 10));
        for sql in [
            format!("SELECT {deep} AS OF 1"),
            format!("SELECT 1 AS OF {deep}"),
            format!("SUBSCRIBE (SELECT {deep})"),
            format!("SUBSCRIBE t UP TO {deep}"),
            format!("COPY (SUBSCRIBE t AS OF {deep}) TO STDOUT"),
        ] {
            let e = parse(&sql).expect_err("too deep");
            assert_eq!(e.sqlstate().code(), "54001", "{}: {e}", &sql[..40]);
        }
    }

    #[test]
    fn errors_are_syntax_errors() {
        for sql in ["SUBSCRIBE", "SUBSCRIBE (SELECT 1", "COPY (SUBSCRIBE t) TO '/tmp/x'", "SUBSCRIBE t WITH (", "SUBSCRIBE t AS OF"] {
            let e = parse(sql).expect_err(sql);
            assert_eq!(e.sqlstate().code(), "42601", "{sql}: {e}");
        }
    }
}
