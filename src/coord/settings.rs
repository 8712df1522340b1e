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

/// One setting.
pub struct Setting {
    pub name: &'static str,
    pub default: &'static str,
    pub category: &'static str,
    pub description: &'static str,
    /// Reported but not settable (`server_version`...).
    pub read_only: bool,
}

const fn s(name: &'static str, default: &'static str, category: &'static str, description: &'static str) -> Setting {
    Setting { name, default, category, description, read_only: false }
}

const fn fixed(name: &'static str, default: &'static str, description: &'static str) -> Setting {
    Setting { name, default, category: "Preset Options", description, read_only: true }
}

/// Every setting, by lower-case name.
pub static SETTINGS: &[Setting] = &[
    fixed("server_version", SERVER_VERSION, "Shows the server version."),
    fixed("server_version_num", "150000", "Shows the server version as an integer."),
    fixed("server_encoding", "UTF8", "Shows the server (database) character set encoding."),
    fixed("integer_datetimes", "on", "Shows whether datetimes are integer based."),
    fixed("max_identifier_length", "63", "Shows the maximum identifier length."),
    fixed("block_size", "8192", "Shows the size of a disk block."),
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
    s("row_security", "on", "Client Connection Defaults", "Enable row security."),
    s("synchronous_commit", "on", "Write-Ahead Log", "Sets the current transaction's synchronization level."),
    s("check_function_bodies", "on", "Client Connection Defaults", "Check routine bodies during CREATE FUNCTION."),
    s("xmloption", "content", "Client Connection Defaults", "Sets whether XML data in implicit parsing and serialization operations is to be considered as documents or content fragments."),
    s("default_table_access_method", "heap", "Client Connection Defaults", "Sets the default table access method for new tables."),
    s("default_tablespace", "", "Client Connection Defaults", "Sets the default tablespace to create tables and indexes in."),
    s("work_mem", "4MB", "Resource Usage", "Sets the maximum memory to be used for query workspaces."),
    s("enable_seqscan", "on", "Query Tuning", "Enables the planner's use of sequential-scan plans."),
    s("jit", "off", "Query Tuning", "Allow JIT compilation."),
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
        Some(s) if s.read_only => return Err(Error::InvalidParameter(format!("parameter \"{name}\" cannot be changed"))),
        Some(_) => {}
    }
    if value.eq_ignore_ascii_case("default") {
        vars.remove(&name);
        return Ok(());
    }
    if name == "transaction_isolation" && Isolation::parse(&value).is_none() {
        return Err(Error::InvalidParameter(format!("invalid value for parameter \"transaction_isolation\": \"{value}\"")));
    }
    vars.insert(name, value);
    Ok(())
}

/// `RESET name`, or `RESET ALL` (`None`), which keeps the application name
/// the client connected with.
pub fn reset(vars: &mut BTreeMap<String, String>, name: Option<&str>) -> Result<(), Error> {
    match name {
        None => vars.retain(|k, _| k == "application_name"),
        Some(name) => {
            let key = canonical(name);
            find(&key).ok_or_else(|| unknown(name))?;
            vars.remove(&key);
        }
    }
    Ok(())
}
