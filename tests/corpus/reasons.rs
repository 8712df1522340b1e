//! Failure reasons: one short, deterministic line per failure, so that
//! failures group into the causes worth fixing and the expectations file
//! stays stable when only a message's quoted SQL fragment changes.
//!
//! A server error becomes `<SQLSTATE> <first line of the message>`,
//! normalized:
//!
//! - `... not supported yet: <SQL fragment>` keeps the construct that is
//!   not supported instead of the fragment: `IN (subquery)`, `EXISTS
//!   (subquery)`, `scalar subquery`, `UNION ALL`, `UNION`, `EXCEPT`,
//!   `INTERSECT`, or the statement's first two words;
//! - names in double quotes become `"…"` (except in syntax errors, where
//!   the token matters), and so do object names with digits
//!   (`view_1_tab0_153`, `t1r1`);
//! - at most 160 characters.

/// The reason of a server error.
pub fn sql_error(code: &str, message: &str) -> String {
    let first = message.lines().next().unwrap_or("").trim();
    let normalized = match first.split_once(" not supported yet: ") {
        Some((what, fragment)) => {
            format!("{what} not supported yet: {}", unsupported_construct(what, fragment))
        }
        None if code == "42601" => first.to_string(),
        None => normalize_names(first),
    };
    truncate(&format!("{code} {normalized}").replace('\t', " "), 160)
}

/// The construct a fragment that is "not supported yet" is about.
fn unsupported_construct(what: &str, fragment: &str) -> String {
    let upper = fragment.to_ascii_uppercase();
    let words: Vec<&str> = upper.split_whitespace().collect();
    let joined = words.join(" ");
    if what.ends_with("statement") {
        return words.iter().take(2).copied().collect::<Vec<_>>().join(" ");
    }
    if what.ends_with("query form") {
        // The whole query: name its first set operation.
        for op in ["UNION ALL", "UNION", "EXCEPT", "INTERSECT"] {
            if joined.contains(&format!(" {op} ")) {
                return op.to_string();
            }
        }
    }
    let squeezed = joined.replace("( ", "(");
    if squeezed.contains("EXISTS (SELECT") || squeezed.contains("EXISTS(SELECT") {
        "EXISTS (subquery)".to_string()
    } else if squeezed.contains(" IN (SELECT") || squeezed.contains(" IN(SELECT") {
        "IN (subquery)".to_string()
    } else if squeezed.contains("(SELECT") {
        "scalar subquery".to_string()
    } else {
        truncate(&normalize_names(fragment), 60)
    }
}

/// Replaces double-quoted names and names containing digits with `…`.
fn normalize_names(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_quotes = false;
    for (i, part) in text.split('"').enumerate() {
        if i > 0 {
            out.push('"');
        }
        if in_quotes {
            out.push('…');
        } else {
            out.push_str(&normalize_words(part));
        }
        in_quotes = !in_quotes;
    }
    out
}

/// Replaces identifiers that mix letters and digits (`tab0`, `view_1_x`)
/// with `…`; plain numbers and words stay.
fn normalize_words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        let has_digit = word.chars().any(|c| c.is_ascii_digit());
        let starts_alpha = word.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_');
        if has_digit && starts_alpha {
            out.push('…');
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() > max {
        text.chars().take(max - 3).collect::<String>() + "..."
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies() {
        assert_eq!(
            sql_error("0A000", "expression not supported yet: col0 IN (SELECT col3 FROM tab0)"),
            "0A000 expression not supported yet: IN (subquery)"
        );
        assert_eq!(
            sql_error("0A000", "expression not supported yet: NOT EXISTS ( SELECT 1 FROM t1)"),
            "0A000 expression not supported yet: EXISTS (subquery)"
        );
        assert_eq!(
            sql_error("0A000", "expression not supported yet: (SELECT count(*) FROM t1 AS x)"),
            "0A000 expression not supported yet: scalar subquery"
        );
        assert_eq!(
            sql_error(
                "0A000",
                "query form not supported yet: SELECT pk FROM tab0 WHERE col0 IN (SELECT 1) UNION ALL SELECT 2"
            ),
            "0A000 query form not supported yet: UNION ALL"
        );
        assert_eq!(
            sql_error("0A000", "statement not supported yet: CREATE TRIGGER t1r1 BEFORE"),
            "0A000 statement not supported yet: CREATE TRIGGER"
        );
        assert_eq!(
            sql_error(
                "42803",
                "column \"t1.a\" must appear in the GROUP BY clause or be used in an aggregate function"
            ),
            "42803 column \"…\" must appear in the GROUP BY clause or be used in an aggregate function"
        );
        assert_eq!(
            sql_error("2BP01", "cannot drop view view_1_tab0_153 because other objects depend on it"),
            "2BP01 cannot drop view … because other objects depend on it"
        );
        assert_eq!(
            sql_error("22001", "value too long for type character varying(16)"),
            "22001 value too long for type character varying(16)"
        );
        assert_eq!(
            sql_error("42601", "syntax error at or near \"DIV\"\nLINE 1"),
            "42601 syntax error at or near \"DIV\""
        );
    }
}
