//! Session settings: the ones ripple knows, their defaults, and which a
//! session may change. `SET`, `SHOW`, `RESET`, `current_setting` and
//! `pg_settings` read this list; an unknown name is 42704, as in Postgres.
//!
//! Owns: the list, the validation of names and values, and what `SET`,
//! `SHOW` and `RESET` do to a session's values. Must not: interpret a
//! setting's meaning otherwise (the code that reads a setting does).

use crate::coord::recovery::Isolation;
use crate::repr::{Datum, Error};
use std::collections::BTreeMap;

/// The `server_version` reported to clients (ParameterStatus, `SHOW`).
pub const SERVER_VERSION: &str = "15.0 (ripple)";

/// The one database a server has (`current_database()`): a start-up that
/// names another is refused (3D000).
pub const DATABASE_NAME: &str = "ripple";

/// One setting.
pub struct Setting {
    pub name: &'static str,
    pub default: &'static str,
    pub category: &'static str,
    pub description: &'static str,
    /// Reported but not settable (`server_version`...).
    pub read_only: bool,
    /// Read-only because the server's command line sets it
    /// (`max_connections`): it changes with a restart.
    pub at_start: bool,
}

const fn s(name: &'static str, default: &'static str, category: &'static str, description: &'static str) -> Setting {
    Setting { name, default, category, description, read_only: false, at_start: false }
}

const fn fixed(name: &'static str, default: &'static str, description: &'static str) -> Setting {
    Setting { name, default, category: "Preset Options", description, read_only: true, at_start: false }
}

/// Values of read-only settings the server's command line decides
/// (`max_connections`), fixed for the life of the process as PostgreSQL's
/// postmaster settings are.
static SERVER_VALUES: std::sync::OnceLock<BTreeMap<&'static str, String>> = std::sync::OnceLock::new();

/// Sets the values of read-only settings decided at start
/// (`max_connections`). Called once, before any session starts; later
/// calls are ignored (the first values stay, so every session sees one).
pub fn set_server_values(values: impl IntoIterator<Item = (&'static str, String)>) {
    let _ = SERVER_VALUES.set(values.into_iter().filter(|(name, _)| find(name).is_some_and(|s| s.read_only)).collect());
}

/// Every known setting's default value, by name (shared by every
/// session's `sql::Settings`).
pub fn defaults() -> std::sync::Arc<std::collections::BTreeMap<String, String>> {
    static DEFAULTS: std::sync::OnceLock<std::sync::Arc<std::collections::BTreeMap<String, String>>> =
        std::sync::OnceLock::new();
    DEFAULTS
        .get_or_init(|| {
            let server = SERVER_VALUES.get();
            let value = |s: &Setting| server.and_then(|v| v.get(s.name)).cloned().unwrap_or_else(|| s.default.to_string());
            std::sync::Arc::new(SETTINGS.iter().map(|s| (s.name.to_string(), value(s))).collect())
        })
        .clone()
}

pub static SETTINGS: &[Setting] = &[
    fixed("server_version", SERVER_VERSION, "Shows the server version."),
    fixed("server_version_num", "150000", "Shows the server version as an integer."),
    fixed("server_encoding", "UTF8", "Shows the server (database) character set encoding."),
    fixed("integer_datetimes", "on", "Shows whether datetimes are integer based."),
    fixed("max_identifier_length", "63", "Shows the maximum identifier length."),
    fixed("max_index_keys", "32", "Shows the maximum number of index keys."),
    fixed("max_function_args", "100", "Shows the maximum number of function arguments."),
    fixed("block_size", "8192", "Shows the size of a disk block."),
    Setting {
        name: "max_connections",
        default: "100",
        category: "Connections and Authentication / Connection Settings",
        description: "Sets the maximum number of concurrent connections.",
        read_only: true,
        at_start: true,
    },
    Setting {
        name: "memory_limit",
        default: "0",
        category: "Resource Usage / Memory",
        description: "Sets the most heap memory the server may hold (--memory-limit; 0: no limit).",
        read_only: true,
        at_start: true,
    },
    Setting {
        name: "max_message_size",
        default: "1GB",
        category: "Connections and Authentication / Connection Settings",
        description: "Sets the largest frontend message a client may send (--max-message-size).",
        read_only: true,
        at_start: true,
    },
    Setting {
        name: "authentication_timeout",
        default: "1min",
        category: "Connections and Authentication / Authentication",
        // (`server::protocol::STARTUP_TIMEOUT`.)
        description: "Sets the maximum allowed time to complete client authentication.",
        read_only: true,
        at_start: true,
    },
    Setting {
        name: "password_encryption",
        default: "scram-sha-256",
        category: "Connections and Authentication / Authentication",
        // (The only way ripple keeps a password; libpq's
        // PQencryptPasswordConn, behind psql's \password, reads it.)
        description: "Chooses the algorithm for encrypting passwords.",
        read_only: true,
        at_start: true,
    },
    Setting {
        name: "ssl",
        default: "off",
        category: "Connections and Authentication / SSL",
        description: "Enables SSL connections.",
        read_only: true,
        at_start: true,
    },
    fixed("lc_collate", "C", "Shows the collation order locale."),
    fixed("lc_ctype", "C", "Shows the character classification and case conversion locale."),
    fixed("is_superuser", "on", "Shows whether the current user is a superuser."),
    fixed("in_hot_standby", "off", "Shows whether hot standby is currently active."),
    s("client_encoding", "UTF8", "Client Connection Defaults", "Sets the client's character set encoding."),
    s("datestyle", "ISO, MDY", "Client Connection Defaults", "Sets the display format for date and time values."),
    s("intervalstyle", "postgres", "Client Connection Defaults", "Sets the display format for interval values."),
    s("timezone", "UTC", "Client Connection Defaults", "Sets the time zone for displaying and interpreting time stamps."),
    s("extra_float_digits", "1", "Client Connection Defaults", "Sets the number of digits displayed for floating-point values."),
    s("search_path", "\"$user\", public", "Client Connection Defaults", "Sets the schema search order for names that are not schema-qualified."),
    s("application_name", "", "Reporting and Logging", "Sets the application name to be reported in statistics and logs."),
    s("client_min_messages", "notice", "Client Connection Defaults", "Sets the message levels that are sent to the client."),
    s("standard_conforming_strings", "on", "Version and Platform Compatibility", "Causes '...' strings to treat backslashes literally."),
    s("bytea_output", "hex", "Client Connection Defaults", "Sets the output format for bytea."),
    s("statement_timeout", "0", "Client Connection Defaults", "Sets the maximum allowed duration of any statement."),
    s("lock_timeout", "0", "Client Connection Defaults", "Sets the maximum allowed duration of any wait for a lock."),
    s("idle_in_transaction_session_timeout", "0", "Client Connection Defaults", "Sets the maximum allowed idle time between queries, when in a transaction."),
    s("default_transaction_isolation", "strict serializable", "Client Connection Defaults", "Sets the transaction isolation level of each new transaction."),
    s("transaction_isolation", "strict serializable", "Client Connection Defaults", "Sets the current transaction's isolation level."),
    s("default_transaction_read_only", "off", "Client Connection Defaults", "Sets the default read-only status of new transactions."),
    s("transaction_read_only", "off", "Client Connection Defaults", "Sets the current transaction's read-only status."),
    s("session_authorization", "", "Client Connection Defaults", "Sets the session user name."),
    s("role", "none", "Client Connection Defaults", "Sets the current role."),
    s("row_security", "on", "Client Connection Defaults", "Enable row security."),
    s("synchronous_commit", "on", "Write-Ahead Log", "Sets the current transaction's synchronization level."),
    s("check_function_bodies", "on", "Client Connection Defaults", "Check routine bodies during CREATE FUNCTION."),
    s("xmloption", "content", "Client Connection Defaults", "Sets whether XML data in implicit parsing and serialization operations is to be considered as documents or content fragments."),
    s("default_table_access_method", "heap", "Client Connection Defaults", "Sets the default table access method for new tables."),
    s("default_tablespace", "", "Client Connection Defaults", "Sets the default tablespace to create tables and indexes in."),
    s("work_mem", "4MB", "Resource Usage", "Sets the maximum memory to be used for query workspaces."),
    s(
        "subscribe_buffer_limit",
        "256MB",
        "Resource Usage / Memory",
        "Sets how many bytes of changes a SUBSCRIBE's client may fall behind before the subscription fails.",
    ),
    s("enable_seqscan", "on", "Query Tuning", "Enables the planner's use of sequential-scan plans."),
    s("jit", "off", "Query Tuning", "Allow JIT compilation."),
    s("synchronize_seqscans", "on", "Version and Platform Compatibility", "Enable synchronized sequential scans."),
    s("geqo", "on", "Query Tuning", "Enables genetic query optimization."),
    s("max_parallel_workers_per_gather", "0", "Resource Usage", "Sets the maximum number of parallel processes per executor node."),
    s("cluster_name", "", "Reporting and Logging", "Sets the name of the cluster."),
];

/// The setting called `name` (lower case), if ripple has it.
pub fn find(name: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.name == name)
}

/// The canonical name of a setting as written in `SET`/`SHOW` (`TimeZone`,
/// `transaction isolation level`).
pub fn canonical(name: &str) -> String {
    let n = name.trim().to_lowercase();
    match n.as_str() {
        "time zone" => "timezone".into(),
        "transaction isolation level" => "transaction_isolation".into(),
        "names" => "client_encoding".into(),
        "session authorization" => "session_authorization".into(),
        _ => n,
    }
}

fn unknown(name: &str) -> Error {
    Error::UndefinedObject(format!("unrecognized configuration parameter \"{name}\""))
}

/// `SHOW name` (`SHOW ALL`: every setting with its value and description)
/// for a session whose settings are `info`'s.
pub fn show(info: &crate::sql::SessionInfo, name: &str) -> Result<Vec<Vec<Datum>>, Error> {
    if name == "all" {
        return Ok(SETTINGS
            .iter()
            .map(|s| {
                let v = info.settings.get(s.name).cloned().unwrap_or_default();
                vec![Datum::Text(s.name.into()), Datum::Text(v), Datum::Text(s.description.into())]
            })
            .collect());
    }
    let key = canonical(name);
    find(&key).ok_or_else(|| unknown(name))?;
    Ok(vec![vec![Datum::Text(info.settings.get(&key).cloned().unwrap_or_default())]])
}

/// `SET name = value` (`DEFAULT` resets) on a session's values.
pub fn set(vars: &mut BTreeMap<String, String>, name: &str, value: String) -> Result<(), Error> {
    let name = canonical(name);
    match find(&name) {
        None => return Err(unknown(&name)),
        Some(s) if s.at_start => {
            return Err(Error::CantChangeRuntimeParam(format!("parameter \"{name}\" cannot be changed without restarting the server")));
        }
        Some(s) if s.read_only => return Err(Error::CantChangeRuntimeParam(format!("parameter \"{name}\" cannot be changed"))),
        Some(_) => {}
    }
    if value.eq_ignore_ascii_case("default") {
        vars.remove(&name);
        return Ok(());
    }
    if name == "subscribe_buffer_limit" {
        crate::memory::parse_size(&value).map_err(|e| Error::InvalidParameter(format!("invalid value for parameter \"{name}\": {e}")))?;
    }
    if name == "transaction_isolation" && Isolation::parse(&value).is_none() {
        return Err(Error::InvalidParameter(format!("invalid value for parameter \"transaction_isolation\": \"{value}\"")));
    }
    let value = if DURATIONS.contains(&name.as_str()) {
        let ms = parse_duration_ms(&value).ok_or_else(|| {
            Error::InvalidParameter(format!("invalid value for parameter \"{name}\": \"{value}\""))
        })?;
        format_duration_ms(ms)
    } else {
        value
    };
    vars.insert(name, value);
    Ok(())
}

/// `subscribe_buffer_limit` in bytes.
pub fn subscribe_buffer_limit(vars: &BTreeMap<String, String>) -> usize {
    vars.get("subscribe_buffer_limit")
        .and_then(|v| crate::memory::parse_size(v).ok())
        .unwrap_or(crate::coord::subscribe::BUFFER_LIMIT)
}

/// The settings that hold a duration (milliseconds without a unit).
const DURATIONS: [&str; 3] = ["statement_timeout", "lock_timeout", "idle_in_transaction_session_timeout"];

/// A duration setting's value in milliseconds: a number with an optional
/// unit (`us`, `ms`, `s`, `min`, `h`, `d`), as Postgres reads it.
pub fn parse_duration_ms(value: &str) -> Option<u64> {
    let v = value.trim().trim_matches('\'');
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (num, unit) = v.split_at(split);
    let n: f64 = num.parse().ok()?;
    let scale = match unit.trim() {
        "" | "ms" => 1.0,
        "us" => 0.001,
        "s" => 1_000.0,
        "min" => 60_000.0,
        "h" => 3_600_000.0,
        "d" => 86_400_000.0,
        _ => return None,
    };
    let ms = (n * scale).round();
    (ms.is_finite() && ms >= 0.0 && ms <= i32::MAX as f64).then_some(ms as u64)
}

/// A duration as `SHOW` prints it: in the largest unit that divides it.
fn format_duration_ms(ms: u64) -> String {
    if ms == 0 {
        return "0".into();
    }
    for (unit, size) in [("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1_000)] {
        if ms % size == 0 {
            return format!("{}{unit}", ms / size);
        }
    }
    format!("{ms}ms")
}

/// The settings a client gives in its start-up message: parameters named
/// like a setting, and `-c name=value` / `--name=value` in `options`.
/// Checked as `SET` checks them (a client that names an unknown setting
/// cannot connect, as in Postgres).
pub fn startup_settings(params: &std::collections::HashMap<String, String>) -> Result<BTreeMap<String, String>, Error> {
    let mut vars = BTreeMap::new();
    // The start-up message's own fields, which are not settings here.
    const NOT_SETTINGS: [&str; 4] = ["user", "database", "options", "replication"];
    for (k, v) in params {
        let key = k.to_lowercase();
        if !NOT_SETTINGS.contains(&key.as_str()) && find(&key).is_some_and(|s| !s.read_only) {
            set(&mut vars, &key, v.clone())?;
        }
    }
    if let Some(options) = params.get("options") {
        let mut words = Vec::new();
        let mut word = String::new();
        let mut chars = options.chars();
        // Words are separated by spaces; a backslash escapes the next one.
        while let Some(c) = chars.next() {
            match c {
                '\\' => word.extend(chars.next()),
                ' ' | '\t' => words.extend((!word.is_empty()).then(|| std::mem::take(&mut word))),
                c => word.push(c),
            }
        }
        words.extend((!word.is_empty()).then_some(word));
        let mut it = words.into_iter();
        while let Some(w) = it.next() {
            let assignment = if w == "-c" {
                it.next().unwrap_or_default()
            } else if let Some(rest) = w.strip_prefix("-c").or_else(|| w.strip_prefix("--")) {
                rest.to_string()
            } else {
                return Err(Error::InvalidParameter(format!("invalid command-line argument for server process: {w}")));
            };
            let Some((name, value)) = assignment.split_once('=') else {
                return Err(Error::InvalidParameter(format!("parameter \"{assignment}\" requires a value")));
            };
            set(&mut vars, &name.replace('-', "_"), value.to_string())?;
        }
    }
    Ok(vars)
}

/// The settings whose changes a client is told of (ParameterStatus), by
/// the name Postgres reports them under.
const REPORTED: [(&str, &str); 7] = [
    ("application_name", "application_name"),
    ("client_encoding", "client_encoding"),
    ("DateStyle", "datestyle"),
    ("IntervalStyle", "intervalstyle"),
    ("TimeZone", "timezone"),
    ("default_transaction_read_only", "default_transaction_read_only"),
    ("standard_conforming_strings", "standard_conforming_strings"),
];

/// The reported settings that differ between a session's values `before`
/// and `after` a statement, with their new values.
pub fn reported_changes(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let value = |vars: &BTreeMap<String, String>, key: &str| {
        vars.get(key).cloned().or_else(|| find(key).map(|s| s.default.to_string())).unwrap_or_default()
    };
    REPORTED
        .iter()
        .filter(|(_, key)| value(before, key) != value(after, key))
        .map(|(wire, key)| (wire.to_string(), value(after, key)))
        .collect()
}

/// A session's statement timeout, if one is set.
pub fn statement_timeout(vars: &BTreeMap<String, String>) -> Option<std::time::Duration> {
    timeout(vars, "statement_timeout")
}

/// How long a session may wait for its client inside a transaction block
/// (`idle_in_transaction_session_timeout`), if that is limited.
pub fn idle_in_transaction_timeout(vars: &BTreeMap<String, String>) -> Option<std::time::Duration> {
    timeout(vars, "idle_in_transaction_session_timeout")
}

/// The duration setting `name` (milliseconds without a unit), if above 0.
fn timeout(vars: &BTreeMap<String, String>, name: &str) -> Option<std::time::Duration> {
    let ms = parse_duration_ms(vars.get(name)?)?;
    (ms > 0).then(|| std::time::Duration::from_millis(ms))
}

/// `RESET name`, or `RESET ALL` (`None`): back to the session's defaults
/// (what the client gave at start-up), else the server's.
pub fn reset(vars: &mut BTreeMap<String, String>, defaults: &BTreeMap<String, String>, name: Option<&str>) -> Result<(), Error> {
    match name {
        None => *vars = defaults.clone(),
        Some(name) => {
            let key = canonical(name);
            find(&key).ok_or_else(|| unknown(name))?;
            match defaults.get(&key) {
                Some(v) => vars.insert(key, v.clone()),
                None => vars.remove(&key),
            };
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        let mut vars = BTreeMap::new();
        for (given, shown) in [("5000", "5s"), ("'1min'", "1min"), ("90s", "90s"), ("1500", "1500ms"), ("0", "0"), ("2h", "2h")] {
            set(&mut vars, "statement_timeout", given.into()).unwrap();
            assert_eq!(vars["statement_timeout"], shown, "{given}");
        }
        assert!(set(&mut vars, "statement_timeout", "soon".into()).is_err());
        assert!(set(&mut vars, "statement_timeout", "5 parsecs".into()).is_err());
        assert_eq!(statement_timeout(&vars), Some(std::time::Duration::from_secs(7200)));
    }

    #[test]
    fn startup_options() {
        let params: std::collections::HashMap<String, String> = [
            ("user", "u"),
            ("statement_timeout", "5000"),
            ("options", "-c search_path=public  --DateStyle=ISO\\,\\ DMY -cwork_mem=8MB"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let vars = startup_settings(&params).unwrap();
        assert_eq!(vars["statement_timeout"], "5s");
        assert_eq!(vars["search_path"], "public");
        assert_eq!(vars["datestyle"], "ISO, DMY");
        assert_eq!(vars["work_mem"], "8MB");
        let bad: std::collections::HashMap<String, String> =
            [("options".to_string(), "-c nosuch=1".to_string())].into_iter().collect();
        assert!(matches!(startup_settings(&bad), Err(Error::UndefinedObject(_))));
    }

    #[test]
    fn reported() {
        let before = BTreeMap::new();
        let mut after = BTreeMap::new();
        set(&mut after, "TimeZone", "Europe/Paris".into()).unwrap();
        set(&mut after, "work_mem", "8MB".into()).unwrap();
        assert_eq!(reported_changes(&before, &after), vec![("TimeZone".to_string(), "Europe/Paris".to_string())]);
        assert_eq!(reported_changes(&after, &before), vec![("TimeZone".to_string(), "UTC".to_string())]);
    }
}

