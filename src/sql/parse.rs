//! Statements as ripple reads them: sqlparser's PostgreSQL grammar, plus
//! the few PostgreSQL statements sqlparser does not parse (`REFRESH
//! MATERIALIZED VIEW`, `CHECKPOINT`, `ALTER VIEW | MATERIALIZED VIEW ...
//! RENAME TO`, `ALTER ... SET SCHEMA`, `FETCH`, `MOVE`, PostgreSQL's
//! `VACUUM` and `ANALYZE`) and PostgreSQL's boolean spellings in `COPY` options
//! (`FREEZE on`, `HEADER 1`).
//!
//! Owns: turning text into `Stmt`s. Must not: resolve names or look at
//! the catalog (the binder does).

use super::copy::check_copy_from_stdin_is_last;
use super::ItemKind;
use crate::repr::Error;
use super::expr::MAX_EXPR_DEPTH;
use sqlparser::ast::{Expr, Ident, ObjectName, Statement, Visit, Visitor};
use std::ops::ControlFlow;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Token, TokenWithSpan, Tokenizer, Word};
use std::fmt;

/// How deeply the parser may nest (sqlparser's default is 50, which
/// machine-generated WHERE clauses exceed). Statements are bound and
/// planned on the server's threads, whose stacks `main` sizes for this.
pub const PARSER_RECURSION_LIMIT: usize = 3000;

/// One statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    /// Anything sqlparser parses.
    Sql(Statement),
    /// `REFRESH MATERIALIZED VIEW [CONCURRENTLY] name [WITH [NO] DATA]`.
    Refresh { name: ObjectName, concurrently: bool, with_data: bool },
    /// `CHECKPOINT`.
    Checkpoint,
    /// `ALTER VIEW | MATERIALIZED VIEW [IF EXISTS] name RENAME TO new`
    /// (sqlparser parses the `TABLE` and `INDEX` forms itself).
    Rename { kind: ItemKind, if_exists: bool, name: ObjectName, new_name: Ident },
    /// `ALTER TABLE | VIEW | MATERIALIZED VIEW [IF EXISTS] name SET SCHEMA
    /// schema` (sqlparser parses none of them; PostgreSQL has no `ALTER
    /// INDEX ... SET SCHEMA`: an index goes with its table).
    SetSchema { kind: ItemKind, if_exists: bool, name: ObjectName, schema: Ident },
    /// `VACUUM [(options)] [FULL] [FREEZE] [VERBOSE] [ANALYZE] [t [(cols)], ...]`
    /// and `ANALYZE [(options)] [VERBOSE] [t [(cols)], ...]` (sqlparser
    /// reads other dialects' forms): `verb` is `VACUUM` or `ANALYZE`.
    Maintenance { verb: &'static str, tables: Vec<ObjectName> },
    /// `FETCH [direction] [FROM | IN] cursor` and `MOVE ...` (sqlparser
    /// reads neither `FETCH cursor` nor `MOVE`): `cursor` is case-folded.
    /// `WITH (timeout = 'interval')`: how long a `FETCH` from a
    /// `SUBSCRIBE` cursor waits for a row (the literal as written).
    Fetch { cursor: String, direction: FetchDirection, move_only: bool, timeout: Option<String> },
    /// `query AS OF expr`: the query read at a past time
    /// (`parse_subscribe::query_as_of`).
    AsOf { query: Box<sqlparser::ast::Query>, as_of: Expr },
    /// `SUBSCRIBE`, read as rows, as `COPY` data or through a cursor
    /// (`parse_subscribe`).
    Subscribe { sub: Box<super::parse_subscribe::Subscribe>, output: super::parse_subscribe::Output },
    /// `ALTER CLUSTER name REBALANCE | MOVE BINS ...` (`parse_cluster`).
    AlterCluster(super::parse_cluster::AlterCluster),
}

/// Where a `FETCH` or `MOVE` goes (PostgreSQL's forms, normalized:
/// `NEXT` is `Forward(Some(1))`, `ALL` is `Forward(None)`, `PRIOR` is
/// `Backward(Some(1))`, `FIRST` is `Absolute(1)`, `LAST` is
/// `Absolute(-1)`; a negative count reverses the direction).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FetchDirection {
    /// The next `n` rows, or all the rest (`None`).
    Forward(Option<u64>),
    /// The previous `n` rows, or all of them (`None`), nearest first.
    Backward(Option<u64>),
    /// The row at this position (negative: from the end; 0: before the
    /// first row).
    Absolute(i64),
    /// The row this many rows away (0: the current row again).
    Relative(i64),
}

impl fmt::Display for FetchDirection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchDirection::Forward(Some(n)) => write!(f, "FORWARD {n}"),
            FetchDirection::Forward(None) => write!(f, "FORWARD ALL"),
            FetchDirection::Backward(Some(n)) => write!(f, "BACKWARD {n}"),
            FetchDirection::Backward(None) => write!(f, "BACKWARD ALL"),
            FetchDirection::Absolute(n) => write!(f, "ABSOLUTE {n}"),
            FetchDirection::Relative(n) => write!(f, "RELATIVE {n}"),
        }
    }
}

impl fmt::Display for Stmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Stmt::Sql(s) => write!(f, "{s}"),
            Stmt::Refresh { name, concurrently, with_data } => {
                write!(f, "REFRESH MATERIALIZED VIEW ")?;
                if *concurrently {
                    write!(f, "CONCURRENTLY ")?;
                }
                write!(f, "{name}")?;
                if !with_data {
                    write!(f, " WITH NO DATA")?;
                }
                Ok(())
            }
            Stmt::Checkpoint => write!(f, "CHECKPOINT"),
            Stmt::AlterCluster(a) => write!(f, "{a}"),
            Stmt::Maintenance { verb, tables } => {
                write!(f, "{verb}")?;
                for (i, t) in tables.iter().enumerate() {
                    write!(f, "{}{t}", if i == 0 { " " } else { ", " })?;
                }
                Ok(())
            }
            Stmt::Fetch { cursor, direction, move_only, timeout } => {
                let verb = if *move_only { "MOVE" } else { "FETCH" };
                write!(f, "{verb} {direction} FROM {}", Ident::with_quote('"', cursor.as_str()))?;
                if let Some(t) = timeout {
                    write!(f, " WITH (timeout = {})", sqlparser::ast::Value::SingleQuotedString(t.clone()))?;
                }
                Ok(())
            }
            Stmt::Subscribe { sub, output } => write!(f, "{}", super::parse_subscribe::display(sub, output)),
            Stmt::AsOf { query, as_of } => write!(f, "{query} AS OF {as_of}"),
            Stmt::Rename { kind, if_exists, name, new_name } => {
                let kind = if *kind == ItemKind::MaterializedView { "MATERIALIZED VIEW" } else { "VIEW" };
                let if_exists = if *if_exists { "IF EXISTS " } else { "" };
                write!(f, "ALTER {kind} {if_exists}{name} RENAME TO {new_name}")
            }
            Stmt::SetSchema { kind, if_exists, name, schema } => {
                let kind = match kind {
                    ItemKind::Table => "TABLE",
                    ItemKind::View => "VIEW",
                    ItemKind::MaterializedView => "MATERIALIZED VIEW",
                    ItemKind::Index => "INDEX",
                };
                let if_exists = if *if_exists { "IF EXISTS " } else { "" };
                write!(f, "ALTER {kind} {if_exists}{name} SET SCHEMA {schema}")
            }
        }
    }
}

impl Stmt {
    /// Whether the statement's description (parameter and result types)
    /// depends only on the catalog and the search path: a query or a
    /// write (not, say, `FETCH`, whose columns are its cursor's).
    pub fn described_by_catalog(&self) -> bool {
        matches!(self, Stmt::Sql(Statement::Query(_) | Statement::Insert(_) | Statement::Update { .. } | Statement::Delete(_)))
    }

    /// The sqlparser statement, if this is one.
    pub fn sql(&self) -> Option<&Statement> {
        match self {
            Stmt::Sql(s) => Some(s),
            _ => None,
        }
    }
}

impl From<Statement> for Stmt {
    fn from(s: Statement) -> Stmt {
        Stmt::Sql(s)
    }
}

/// Parses one expression standing alone (a stored column `DEFAULT`).
pub fn parse_expr(sql: &str) -> Result<sqlparser::ast::Expr, Error> {
    let dialect = PostgreSqlDialect {};
    let mut parser = Parser::new(&dialect)
        .with_recursion_limit(PARSER_RECURSION_LIMIT)
        .try_with_sql(sql)
        .map_err(|e| Error::Syntax(syntax_message(&e.to_string())))?;
    let expr = parser.parse_expr().map_err(|e| Error::Syntax(syntax_message(&e.to_string())))?;
    if parser.peek_token_ref().token != sqlparser::tokenizer::Token::EOF {
        return Err(Error::Syntax(format!("syntax error in expression \"{sql}\"")));
    }
    Ok(expr)
}

/// Parses a string of zero or more statements.
pub fn parse(sql: &str) -> Result<Vec<Stmt>, Error> {
    let dialect = PostgreSqlDialect {};
    let tokens = Tokenizer::new(&dialect, sql).tokenize_with_location().map_err(|e| Error::Syntax(syntax_message(&e.to_string())))?;
    let tokens = retain_history_options(negative_connection_limits(copy_booleans(tokens)));
    let parsed = |tokens| {
        let mut parser = Parser::new(&dialect).with_recursion_limit(PARSER_RECURSION_LIMIT).with_tokens_with_locations(tokens);
        statements(&mut parser).map_err(|e| match e {
            ParserError::RecursionLimitExceeded => Error::Eval(crate::repr::EvalError::StackDepthExceeded),
            e => Error::Syntax(syntax_message(&e.to_string())),
        })
    };
    // An expression is at most as deep as the statement has tokens. A
    // statement that may be deeper than the limit is parsed, checked and,
    // when refused or ending in a syntax error, dropped (each recursing
    // once per level) on a stack sized for the deepest tree its text can
    // hold: a level is at least two bytes (`1+`) and takes well under 512
    // bytes of stack.
    let stmts = if tokens.len() > MAX_EXPR_DEPTH {
        let stack = sql.len().saturating_mul(256).clamp(16 << 20, 16 << 30);
        stacker::grow(stack, || parsed(tokens).and_then(refuse_deep))?
    } else {
        parsed(tokens)?
    };
    check_copy_from_stdin_is_last(sql, &stmts)?;
    Ok(stmts)
}

/// `stmts`, unless an expression in one nests deeper than
/// `MAX_EXPR_DEPTH` (54001). sqlparser builds a left-deep chain such as
/// `1+1+...` in a loop, as deep as it is long, below its recursion
/// limit; refused here, no later step (cloning, comparing, binding,
/// dropping: each recurses once per level) meets a deeper tree.
fn refuse_deep(stmts: Vec<Stmt>) -> Result<Vec<Stmt>, Error> {
    /// Expressions entered and not yet left; stops past the limit, so
    /// the walk itself recurses no deeper than that.
    struct Depth(usize);
    impl Visitor for Depth {
        type Break = ();
        fn pre_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
            self.0 += 1;
            if self.0 > MAX_EXPR_DEPTH { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
        }
        fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
            self.0 -= 1;
            ControlFlow::Continue(())
        }
    }
    let deep_expr = |e: &Expr| e.visit(&mut Depth(0)).is_break();
    let deep = stmts.iter().any(|s| match s {
        Stmt::Sql(s) => s.visit(&mut Depth(0)).is_break(),
        Stmt::AsOf { query, as_of } => query.visit(&mut Depth(0)).is_break() || deep_expr(as_of),
        Stmt::Subscribe { sub, .. } => {
            matches!(&sub.target, super::parse_subscribe::Target::Query(q) if q.visit(&mut Depth(0)).is_break())
                || sub.options.iter().filter_map(|(_, v)| v.as_ref()).any(deep_expr)
                || sub.as_of.iter().chain(&sub.up_to).any(deep_expr)
        }
        _ => false,
    });
    if deep {
        return Err(Error::Eval(crate::repr::EvalError::StackDepthExceeded));
    }
    Ok(stmts)
}

/// sqlparser's `parse_statements`, trying ripple's own statements first.
fn statements(p: &mut Parser) -> Result<Vec<Stmt>, ParserError> {
    let mut out = Vec::new();
    loop {
        while p.consume_token(&Token::SemiColon) {}
        if p.peek_token_ref().token == Token::EOF {
            break;
        }
        let stmt = match own_statement(p)? {
            Some(s) => s,
            None => {
                let stmt = p.parse_statement()?;
                // `CREATE MATERIALIZED VIEW ... AS query WITH [NO] DATA`
                // (pg_dump writes it): ripple's views are always populated.
                if matches!(&stmt, Statement::CreateView(cv) if cv.materialized) {
                    let _ = p.parse_keywords(&[Keyword::WITH, Keyword::NO, Keyword::DATA])
                        || p.parse_keywords(&[Keyword::WITH, Keyword::DATA]);
                }
                // `CREATE TABLE ... AS query WITH [NO] DATA`.
                let mut stmt = stmt;
                if let Statement::CreateTable(ct) = &mut stmt {
                    if ct.query.is_some() && ct.with_data.is_none() {
                        if p.parse_keywords(&[Keyword::WITH, Keyword::NO, Keyword::DATA]) {
                            ct.with_data = Some(sqlparser::ast::WithData { data: false, statistics: None });
                        } else if p.parse_keywords(&[Keyword::WITH, Keyword::DATA]) {
                            ct.with_data = Some(sqlparser::ast::WithData { data: true, statistics: None });
                        }
                    }
                }
                Stmt::Sql(stmt)
            }
        };
        out.push(stmt);
        if !p.consume_token(&Token::SemiColon) && p.peek_token_ref().token != Token::EOF {
            return p.expected_ref("end of statement", p.peek_token_ref());
        }
    }
    Ok(out)
}

/// The statements sqlparser does not know, or `None` (nothing consumed).
fn own_statement(p: &mut Parser) -> Result<Option<Stmt>, ParserError> {
    if let Some(a) = super::parse_cluster::statement(p)? {
        return Ok(Some(Stmt::AlterCluster(a)));
    }
    if let Some(s) = super::parse_subscribe::statement(p)? {
        return Ok(Some(s));
    }
    if let Some(s) = super::parse_subscribe::query_as_of(p)? {
        return Ok(Some(s));
    }
    if p.parse_keywords(&[Keyword::REFRESH, Keyword::MATERIALIZED, Keyword::VIEW]) {
        let concurrently = p.parse_keyword(Keyword::CONCURRENTLY);
        let name = p.parse_object_name(false)?;
        let mut with_data = true;
        if p.parse_keyword(Keyword::WITH) {
            with_data = !p.parse_keyword(Keyword::NO);
            p.expect_keyword(Keyword::DATA)?;
        }
        return Ok(Some(Stmt::Refresh { name, concurrently, with_data }));
    }
    for (keyword, verb) in [(Keyword::VACUUM, "VACUUM"), (Keyword::ANALYZE, "ANALYZE")] {
        if p.parse_keyword(keyword) {
            return maintenance(p, verb).map(Some);
        }
    }
    let verb = &p.peek_token_ref().token;
    if is_word(verb, "fetch") || is_word(verb, "move") {
        let move_only = is_word(verb, "move");
        p.next_token();
        return fetch(p, move_only).map(Some);
    }
    if is_word(&p.peek_token_ref().token, "checkpoint") {
        p.next_token();
        return Ok(Some(Stmt::Checkpoint));
    }
    // CREATE USER and ALTER USER: sqlparser reads Snowflake's forms;
    // PostgreSQL's are CREATE ROLE (LOGIN by default) and ALTER ROLE.
    if p.peek_keyword(Keyword::CREATE) && peek_is(p, 1, Keyword::USER) {
        p.next_token();
        p.next_token();
        let mut role = p.parse_create_role()?;
        role.login = role.login.or(Some(true));
        return Ok(Some(Stmt::Sql(Statement::CreateRole(role))));
    }
    if p.peek_keyword(Keyword::ALTER) && peek_is(p, 1, Keyword::USER) {
        p.next_token();
        p.next_token();
        return p.parse_alter_role().map(|s| Some(Stmt::Sql(s)));
    }
    // ALTER VIEW | MATERIALIZED VIEW ... RENAME TO: sqlparser parses only
    // `ALTER VIEW name AS query`; ALTER ... SET SCHEMA: sqlparser parses
    // it for none of the four. Anything else falls through to sqlparser.
    let kind = if !p.peek_keyword(Keyword::ALTER) {
        None
    } else if peek_is(p, 1, Keyword::MATERIALIZED) && peek_is(p, 2, Keyword::VIEW) {
        Some((ItemKind::MaterializedView, 3))
    } else if peek_is(p, 1, Keyword::VIEW) {
        Some((ItemKind::View, 2))
    } else if peek_is(p, 1, Keyword::TABLE) {
        Some((ItemKind::Table, 2))
    } else {
        None
    };
    if let Some((kind, words)) = kind {
        p.next_token();
        // The ALTER token: rewinding stops on it (`prev_token` skips
        // whitespace, so rewinding to a position before it could step back
        // past it into the previous statement).
        let start = p.index() - 1;
        for _ in 1..words {
            p.next_token();
        }
        let if_exists = p.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
        if kind == ItemKind::Table {
            let _ = p.parse_keyword(Keyword::ONLY);
        }
        let name = p.parse_object_name(false)?;
        if p.parse_keywords(&[Keyword::SET, Keyword::SCHEMA]) {
            let schema = p.parse_identifier()?;
            return Ok(Some(Stmt::SetSchema { kind, if_exists, name, schema }));
        }
        if matches!(kind, ItemKind::View | ItemKind::MaterializedView) && p.parse_keywords(&[Keyword::RENAME, Keyword::TO]) {
            let new_name = p.parse_identifier()?;
            return Ok(Some(Stmt::Rename { kind, if_exists, name, new_name }));
        }
        if kind == ItemKind::MaterializedView {
            return p.expected_ref("RENAME TO or SET SCHEMA", p.peek_token_ref());
        }
        while p.index() > start {
            p.prev_token();
        }
    }
    Ok(None)
}

/// The rest of a `VACUUM` or `ANALYZE`: options, then tables (each with
/// an optional column list, which ripple has no use for).
fn maintenance(p: &mut Parser, verb: &'static str) -> Result<Stmt, ParserError> {
    if p.consume_token(&Token::LParen) {
        // (option [value], ...): read up to the closing parenthesis.
        let mut depth = 1;
        while depth > 0 {
            match p.next_token().token {
                Token::LParen => depth += 1,
                Token::RParen => depth -= 1,
                Token::EOF => return p.expected_ref(")", p.peek_token_ref()),
                _ => {}
            }
        }
    }
    while p.parse_one_of_keywords(&[Keyword::FULL, Keyword::FREEZE, Keyword::VERBOSE, Keyword::ANALYZE]).is_some() {}
    let mut tables = Vec::new();
    if !matches!(p.peek_token_ref().token, Token::EOF | Token::SemiColon) {
        loop {
            tables.push(p.parse_object_name(false)?);
            if p.consume_token(&Token::LParen) {
                p.parse_comma_separated(|p| p.parse_identifier())?;
                p.expect_token(&Token::RParen)?;
            }
            if !p.consume_token(&Token::Comma) {
                break;
            }
        }
    }
    Ok(Stmt::Maintenance { verb, tables })
}

/// The rest of a `FETCH` or `MOVE`: `[direction] [FROM | IN] cursor`.
fn fetch(p: &mut Parser, move_only: bool) -> Result<Stmt, ParserError> {
    // A count: an optionally signed integer.
    fn count(p: &mut Parser) -> Result<Option<i64>, ParserError> {
        let negative = match &p.peek_token_ref().token {
            Token::Minus if matches!(p.peek_nth_token_ref(1).token, Token::Number(..)) => true,
            Token::Plus if matches!(p.peek_nth_token_ref(1).token, Token::Number(..)) => false,
            Token::Number(..) => {
                return number(p).map(Some);
            }
            _ => return Ok(None),
        };
        p.next_token();
        let n = number(p)?;
        Ok(Some(if negative { -n } else { n }))
    }
    fn number(p: &mut Parser) -> Result<i64, ParserError> {
        let t = p.next_token();
        match &t.token {
            Token::Number(n, _) => n
                .parse::<i64>()
                .map_err(|_| ParserError::ParserError(format!("Expected: an integer count, found: {n}"))),
            _ => p.expected("an integer count", t),
        }
    }
    // A signed count as a direction: negative counts go the other way.
    let signed = |n: i64, forward: bool| {
        let magnitude = Some(n.unsigned_abs());
        if (n >= 0) == forward { FetchDirection::Forward(magnitude) } else { FetchDirection::Backward(magnitude) }
    };
    let direction = if p.parse_keyword(Keyword::NEXT) {
        FetchDirection::Forward(Some(1))
    } else if p.parse_keyword(Keyword::PRIOR) {
        FetchDirection::Backward(Some(1))
    } else if p.parse_keyword(Keyword::FIRST) {
        FetchDirection::Absolute(1)
    } else if p.parse_keyword(Keyword::LAST) {
        FetchDirection::Absolute(-1)
    } else if p.parse_keyword(Keyword::ABSOLUTE) {
        match count(p)? {
            Some(n) => FetchDirection::Absolute(n),
            None => return p.expected_ref("an integer count", p.peek_token_ref()),
        }
    } else if p.parse_keyword(Keyword::RELATIVE) {
        match count(p)? {
            Some(n) => FetchDirection::Relative(n),
            None => return p.expected_ref("an integer count", p.peek_token_ref()),
        }
    } else if p.parse_keyword(Keyword::ALL) {
        FetchDirection::Forward(None)
    } else if p.parse_keyword(Keyword::FORWARD) {
        if p.parse_keyword(Keyword::ALL) {
            FetchDirection::Forward(None)
        } else {
            count(p)?.map_or(FetchDirection::Forward(Some(1)), |n| signed(n, true))
        }
    } else if p.parse_keyword(Keyword::BACKWARD) {
        if p.parse_keyword(Keyword::ALL) {
            FetchDirection::Backward(None)
        } else {
            count(p)?.map_or(FetchDirection::Backward(Some(1)), |n| signed(n, false))
        }
    } else {
        count(p)?.map_or(FetchDirection::Forward(Some(1)), |n| signed(n, true))
    };
    let _ = p.parse_one_of_keywords(&[Keyword::FROM, Keyword::IN]);
    let cursor = super::binder_names::ident(&p.parse_identifier()?);
    // Materialize's `WITH (timeout = '1s')`, for cursors over SUBSCRIBE.
    let mut timeout = None;
    if !move_only && p.parse_keyword(Keyword::WITH) {
        p.expect_token(&Token::LParen)?;
        let name = p.parse_identifier()?;
        if !name.value.eq_ignore_ascii_case("timeout") {
            return Err(ParserError::ParserError(format!("Expected: TIMEOUT (the one option of FETCH), found: {name}")));
        }
        let _ = p.consume_token(&Token::Eq);
        timeout = Some(p.parse_literal_string()?);
        p.expect_token(&Token::RParen)?;
    }
    Ok(Stmt::Fetch { cursor, direction, move_only, timeout })
}

fn peek_is(p: &Parser, n: usize, keyword: Keyword) -> bool {
    matches!(&p.peek_nth_token_ref(n).token, Token::Word(w) if w.keyword == keyword)
}

fn is_word(t: &Token, word: &str) -> bool {
    matches!(t, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case(word))
}

/// Materialize's view option `RETAIN HISTORY FOR 'interval'` (in a
/// `WITH (...)` list) as the key-value option `retain_history =
/// 'interval'`, which sqlparser reads (and which is also accepted as
/// written).
fn retain_history_options(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let significant: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    for w in significant.windows(5) {
        let [open, retain, history, for_, value] = [w[0], w[1], w[2], w[3], w[4]];
        let opens = matches!(tokens[open].token, Token::LParen | Token::Comma);
        if opens
            && is_word(&tokens[retain].token, "retain")
            && is_word(&tokens[history].token, "history")
            && is_word(&tokens[for_].token, "for")
            && matches!(tokens[value].token, Token::SingleQuotedString(_))
        {
            tokens[retain].token = Token::make_word("retain_history", None);
            tokens[history].token = Token::Eq;
            tokens[for_].token = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
        }
    }
    tokens
}

/// `CONNECTION LIMIT -1` (no limit) as one negative number: sqlparser's
/// role options take an unsigned number only. Other negative limits are
/// passed on the same way, for the binder to refuse.
fn negative_connection_limits(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let significant: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    for w in significant.windows(4) {
        let is = |i: usize, k: Keyword| matches!(&tokens[i].token, Token::Word(word) if word.keyword == k);
        if is(w[0], Keyword::CONNECTION) && is(w[1], Keyword::LIMIT) && tokens[w[2]].token == Token::Minus {
            if let Token::Number(n, long) = &tokens[w[3]].token {
                let negative = Token::Number(format!("-{n}"), *long);
                tokens[w[3]].token = negative;
                tokens[w[2]].token = Token::Whitespace(sqlparser::tokenizer::Whitespace::Space);
            }
        }
    }
    tokens
}

/// PostgreSQL accepts a boolean COPY option as `true|false|on|off|1|0`;
/// sqlparser only as `TRUE|FALSE`. Within a COPY statement's option list,
/// the value after `FREEZE` or `HEADER` is respelled as `TRUE`/`FALSE`.
fn copy_booleans(mut tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let significant = |t: &Token| !matches!(t, Token::Whitespace(_));
    let mut in_copy = false;
    let mut at_statement_start = true;
    let mut expect_value = false;
    for t in tokens.iter_mut() {
        if !significant(&t.token) {
            continue;
        }
        if t.token == Token::SemiColon {
            at_statement_start = true;
            in_copy = false;
            expect_value = false;
            continue;
        }
        if at_statement_start {
            in_copy = matches!(&t.token, Token::Word(w) if w.keyword == Keyword::COPY);
            at_statement_start = false;
            continue;
        }
        if !in_copy {
            continue;
        }
        if expect_value {
            expect_value = false;
            let value = match &t.token {
                Token::Word(w) if w.quote_style.is_none() => match w.value.to_ascii_lowercase().as_str() {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                },
                Token::Number(n, _) if n == "1" => Some(true),
                Token::Number(n, _) if n == "0" => Some(false),
                _ => None,
            };
            if let Some(v) = value {
                t.token = Token::Word(Word {
                    value: if v { "TRUE".into() } else { "FALSE".into() },
                    quote_style: None,
                    keyword: if v { Keyword::TRUE } else { Keyword::FALSE },
                });
            }
            continue;
        }
        expect_value = matches!(&t.token, Token::Word(w) if matches!(w.keyword, Keyword::FREEZE | Keyword::HEADER));
    }
    tokens
}

/// Words a parser error as Postgres does: `syntax error at or near "X"`,
/// or `syntax error at end of input`.
pub(super) fn syntax_message(raw: &str) -> String {
    let msg = raw.strip_prefix("sql parser error: ").unwrap_or(raw);
    if let Some(pos) = msg.find("found: ") {
        let rest = &msg[pos + "found: ".len()..];
        let token = rest.split(" at Line:").next().unwrap_or(rest).trim();
        if token == "EOF" {
            return "syntax error at end of input".into();
        }
        return format!("syntax error at or near \"{}\"", token.trim_matches('"'));
    }
    format!("syntax error: {msg}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(sql: &str) -> Stmt {
        let mut s = parse(sql).expect("parses");
        assert_eq!(s.len(), 1, "{sql}");
        s.remove(0)
    }

    #[test]
    fn own_statements() {
        assert!(matches!(one("REFRESH MATERIALIZED VIEW public.v"), Stmt::Refresh { with_data: true, .. }));
        assert!(matches!(one("refresh materialized view concurrently v with no data;"), Stmt::Refresh { concurrently: true, with_data: false, .. }));
        assert_eq!(one("checkpoint"), Stmt::Checkpoint);
        for (sql, n) in [("VACUUM", 0), ("vacuum analyze t", 1), ("VACUUM (VERBOSE, ANALYZE) a, b (x, y)", 2), ("ANALYZE VERBOSE t", 1)] {
            assert!(matches!(one(sql), Stmt::Maintenance { tables, .. } if tables.len() == n), "{sql}");
        }
        assert!(matches!(one("ALTER MATERIALIZED VIEW IF EXISTS m RENAME TO m2"), Stmt::Rename { kind: ItemKind::MaterializedView, if_exists: true, .. }));
        assert!(matches!(one("ALTER VIEW v RENAME TO w"), Stmt::Rename { kind: ItemKind::View, .. }));
        assert!(matches!(one("ALTER TABLE IF EXISTS ONLY s.t SET SCHEMA u"), Stmt::SetSchema { kind: ItemKind::Table, if_exists: true, .. }));
        assert!(matches!(one("alter materialized view m set schema u"), Stmt::SetSchema { kind: ItemKind::MaterializedView, .. }));
        assert!(parse("ALTER INDEX i SET SCHEMA u").is_err());
        assert!(matches!(one("ALTER INDEX i RENAME TO j"), Stmt::Sql(Statement::AlterIndex { .. })));
        assert!(matches!(one("ALTER TABLE t ADD PRIMARY KEY (a)"), Stmt::Sql(Statement::AlterTable(_))));
        // Rewinding after a look at ALTER stays within its statement.
        let several = parse("SELECT 1;\n  ALTER TABLE t ADD PRIMARY KEY (a);\n ALTER VIEW v AS SELECT 2; ALTER INDEX i RENAME TO j").unwrap();
        assert_eq!(several.len(), 4);
        // The forms sqlparser knows still reach it.
        assert!(matches!(one("ALTER VIEW v AS SELECT 1"), Stmt::Sql(Statement::AlterView { .. })));
        assert!(matches!(one("ALTER TABLE t RENAME TO u"), Stmt::Sql(Statement::AlterTable(_))));
        assert_eq!(parse("SELECT 1; CHECKPOINT; REFRESH MATERIALIZED VIEW v").map(|s| s.len()).ok(), Some(3));
        assert!(parse("CHECKPOINT now").is_err());
        assert!(matches!(one("CREATE MATERIALIZED VIEW m AS SELECT 1 WITH NO DATA"), Stmt::Sql(Statement::CreateView(_))));
        assert!(matches!(one("CREATE MATERIALIZED VIEW m AS SELECT 1 WITH DATA;"), Stmt::Sql(Statement::CreateView(_))));
        assert!(parse("CREATE VIEW v AS SELECT 1 WITH NO DATA").is_err());
        for (sql, data) in [("CREATE TABLE t AS SELECT 1 AS a WITH NO DATA", Some(false)), ("CREATE TABLE t AS SELECT 1 WITH DATA", Some(true)), ("CREATE TABLE t AS (SELECT 1)", None)] {
            let Stmt::Sql(Statement::CreateTable(ct)) = one(sql) else { panic!("{sql}") };
            assert_eq!(ct.with_data.map(|w| w.data), data, "{sql}");
        }
        assert!(parse("ALTER MATERIALIZED VIEW m SET TABLESPACE s").is_err());
    }

    #[test]
    fn fetch_and_move() {
        use FetchDirection::*;
        for (sql, dir, mv) in [
            ("FETCH c", Forward(Some(1)), false),
            ("fetch next from c", Forward(Some(1)), false),
            ("FETCH 5 c", Forward(Some(5)), false),
            ("FETCH -2 IN c", Backward(Some(2)), false),
            ("FETCH ALL FROM c", Forward(None), false),
            ("FETCH FORWARD FROM c", Forward(Some(1)), false),
            ("FETCH FORWARD ALL c", Forward(None), false),
            ("FETCH BACKWARD 3 c", Backward(Some(3)), false),
            ("FETCH BACKWARD -3 c", Forward(Some(3)), false),
            ("FETCH BACKWARD ALL IN c", Backward(None), false),
            ("FETCH PRIOR c", Backward(Some(1)), false),
            ("FETCH FIRST c", Absolute(1), false),
            ("FETCH LAST c", Absolute(-1), false),
            ("FETCH ABSOLUTE -1 c", Absolute(-1), false),
            ("FETCH RELATIVE 0 FROM c", Relative(0), false),
            ("MOVE 3 IN c", Forward(Some(3)), true),
            ("move last in c", Absolute(-1), true),
        ] {
            assert_eq!(one(sql), Stmt::Fetch { cursor: "c".into(), direction: dir, move_only: mv, timeout: None }, "{sql}");
        }
        assert!(matches!(one("FETCH \"My C\""), Stmt::Fetch { cursor, .. } if cursor == "My C"));
        // The text form parses back to the same statement.
        let s = one("MOVE BACKWARD 2 FROM c");
        assert_eq!(one(&s.to_string()), s);
        for bad in ["FETCH", "FETCH ABSOLUTE c", "FETCH 1.5 c", "FETCH 5 FROM", "FETCH 99999999999999999999 c"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn copy_boolean_spellings() {
        for sql in ["COPY t FROM STDIN WITH (FREEZE on)", "copy t from stdin with (freeze 1, header off)", "COPY t TO STDOUT (HEADER on)"] {
            assert!(matches!(one(sql), Stmt::Sql(Statement::Copy { .. })), "{sql}");
        }
        // Only inside COPY: `on` elsewhere is untouched.
        assert!(matches!(one("SELECT 1 AS header"), Stmt::Sql(Statement::Query(_))));
    }

    #[test]
    fn display_round_trips() {
        for sql in ["REFRESH MATERIALIZED VIEW v", "CHECKPOINT", "ALTER MATERIALIZED VIEW m RENAME TO n", "ALTER TABLE IF EXISTS s.t SET SCHEMA u"] {
            assert_eq!(one(sql).to_string(), sql);
        }
    }
}
