//! Errors: the typed error every layer returns (carried to the client with
//! its SQLSTATE), and `EvalError`, the errors of evaluating a scalar
//! expression, which inside a maintained view travel as data.

use serde::{Deserialize, Serialize};

/// A Postgres SQLSTATE code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlState {
    SyntaxError,
    UndefinedTable,
    UndefinedColumn,
    UndefinedObject,
    UndefinedFunction,
    AmbiguousColumn,
    DatatypeMismatch,
    DuplicateTable,
    DuplicateSchema,
    ReservedName,
    DuplicateObject,
    DuplicateColumn,
    DuplicateAlias,
    GroupingError,
    WindowingError,
    WrongObjectType,
    InvalidColumnReference,
    DependentObjectsStillExist,
    InvalidGrantOperation,
    InvalidCatalogName,
    NotNullViolation,
    UniqueViolation,
    InvalidTableDefinition,
    DivisionByZero,
    NumericValueOutOfRange,
    InvalidTextRepresentation,
    InvalidDatetimeFormat,
    DatetimeFieldOverflow,
    StringDataRightTruncation,
    InvalidParameterValue,
    FeatureNotSupported,
    ProtocolViolation,
    ActiveSqlTransaction,
    InvalidTransactionState,
    QueryCanceled,
    IoError,
    InternalError,
    CardinalityViolation,
    InvalidRowCountInLimitClause,
    InvalidRowCountInResultOffsetClause,
    UndefinedParameter,
    IndeterminateDatatype,
    AmbiguousFunction,
    CannotCoerce,
    IntervalFieldOverflow,
    UntranslatableCharacter,
    ProgramLimitExceeded,
    InvalidEscapeSequence,
    SubstringError,
    InvalidArgumentForPowerFunction,
    InvalidArgumentForLogarithm,
    StatementTooComplex,
    ArraySubscriptError,
    InvalidRecursion,
    InFailedSqlTransaction,
    ReadOnlySqlTransaction,
    SerializationFailure,
    DeadlockDetected,
    BadCopyFileFormat,
    InvalidBinaryRepresentation,
    CharacterNotInRepertoire,
    InvalidSchemaName,
    InsufficientPrivilege,
    InvalidRegularExpression,
    NoActiveSqlTransaction,
    InvalidSavepointSpecification,
    InvalidSqlStatementName,
    DuplicatePreparedStatement,
    InvalidCursorName,
    DuplicateCursor,
    ObjectNotInPrerequisiteState,
    ObjectInUse,
    CantChangeRuntimeParam,
    OutOfMemory,
    DiskFull,
    ConfigurationLimitExceeded,
}

impl SqlState {
    /// The five-character code.
    pub fn code(&self) -> &'static str {
        match self {
            SqlState::SyntaxError => "42601",
            SqlState::UndefinedTable => "42P01",
            SqlState::UndefinedColumn => "42703",
            SqlState::UndefinedObject => "42704",
            SqlState::UndefinedFunction => "42883",
            SqlState::AmbiguousColumn => "42702",
            SqlState::DatatypeMismatch => "42804",
            SqlState::DuplicateTable => "42P07",
            SqlState::DuplicateSchema => "42P06",
            SqlState::ReservedName => "42939",
            SqlState::DuplicateObject => "42710",
            SqlState::DuplicateColumn => "42701",
            SqlState::DuplicateAlias => "42712",
            SqlState::GroupingError => "42803",
            SqlState::WindowingError => "42P20",
            SqlState::WrongObjectType => "42809",
            SqlState::InvalidColumnReference => "42P10",
            SqlState::DependentObjectsStillExist => "2BP01",
            SqlState::InvalidGrantOperation => "0LP01",
            SqlState::InvalidCatalogName => "3D000",
            SqlState::NotNullViolation => "23502",
            SqlState::UniqueViolation => "23505",
            SqlState::InvalidTableDefinition => "42P16",
            SqlState::DivisionByZero => "22012",
            SqlState::NumericValueOutOfRange => "22003",
            SqlState::InvalidTextRepresentation => "22P02",
            SqlState::InvalidDatetimeFormat => "22007",
            SqlState::DatetimeFieldOverflow => "22008",
            SqlState::StringDataRightTruncation => "22001",
            SqlState::InvalidParameterValue => "22023",
            SqlState::FeatureNotSupported => "0A000",
            SqlState::ProtocolViolation => "08P01",
            SqlState::ActiveSqlTransaction => "25001",
            SqlState::InvalidTransactionState => "25000",
            SqlState::QueryCanceled => "57014",
            SqlState::IoError => "58030",
            SqlState::InternalError => "XX000",
            SqlState::CardinalityViolation => "21000",
            SqlState::InvalidRowCountInLimitClause => "2201W",
            SqlState::InvalidRowCountInResultOffsetClause => "2201X",
            SqlState::UndefinedParameter => "42P02",
            SqlState::IndeterminateDatatype => "42P18",
            SqlState::AmbiguousFunction => "42725",
            SqlState::CannotCoerce => "42846",
            SqlState::IntervalFieldOverflow => "22015",
            SqlState::UntranslatableCharacter => "22P05",
            SqlState::ProgramLimitExceeded => "54000",
            SqlState::InvalidEscapeSequence => "22025",
            SqlState::SubstringError => "22011",
            SqlState::InvalidArgumentForPowerFunction => "2201F",
            SqlState::InvalidArgumentForLogarithm => "2201E",
            SqlState::StatementTooComplex => "54001",
            SqlState::ArraySubscriptError => "2202E",
            SqlState::InvalidRecursion => "42P19",
            SqlState::InFailedSqlTransaction => "25P02",
            SqlState::ReadOnlySqlTransaction => "25006",
            SqlState::SerializationFailure => "40001",
            SqlState::DeadlockDetected => "40P01",
            SqlState::BadCopyFileFormat => "22P04",
            SqlState::InvalidBinaryRepresentation => "22P03",
            SqlState::CharacterNotInRepertoire => "22021",
            SqlState::InvalidSchemaName => "3F000",
            SqlState::InsufficientPrivilege => "42501",
            SqlState::InvalidRegularExpression => "2201B",
            SqlState::NoActiveSqlTransaction => "25P01",
            SqlState::InvalidSavepointSpecification => "3B001",
            SqlState::InvalidSqlStatementName => "26000",
            SqlState::DuplicatePreparedStatement => "42P05",
            SqlState::InvalidCursorName => "34000",
            SqlState::DuplicateCursor => "42P03",
            SqlState::ObjectNotInPrerequisiteState => "55000",
            SqlState::ObjectInUse => "55006",
            SqlState::CantChangeRuntimeParam => "55P02",
            SqlState::OutOfMemory => "53200",
            SqlState::ConfigurationLimitExceeded => "53400",
            SqlState::DiskFull => "53100",
        }
    }
}

/// An error evaluating a scalar expression. These are data: a maintained view
/// whose input produces one holds it in its error collection, and a read of
/// that view returns it, as Postgres would for the same query.
#[derive(thiserror::Error, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum EvalError {
    #[error("division by zero")]
    DivisionByZero,
    #[error("{0}")]
    OutOfRange(String),
    #[error("numeric field overflow")]
    NumericFieldOverflow,
    #[error("invalid input syntax for type {ty}: \"{text}\"")]
    InvalidTextRepresentation { ty: String, text: String },
    #[error("value too long for type {0}")]
    StringTooLong(String),
    #[error("{0}")]
    DatetimeOverflow(String),
    #[error("null value in column \"{column}\" of relation \"{relation}\" violates not-null constraint")]
    NotNull { column: String, relation: String },
    #[error("more than one row returned by a subquery used as an expression")]
    MultipleRowsFromSubquery,
    #[error("{0}")]
    InvalidParameter(String),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("{0}")]
    IntervalFieldOverflow(String),
    /// A month or day out of range in date input (22008, with Postgres's
    /// DateStyle hint).
    #[error("{0}")]
    DatetimeFieldOverflowMd(String),
    /// Bad jsonb input; `detail` is Postgres's DETAIL line.
    #[error("invalid input syntax for type json")]
    InvalidJson { detail: String },
    /// Bad input whose message names no value (`invalid input syntax for
    /// type bytea`).
    #[error("{0}")]
    InvalidInput(String),
    #[error("{message}")]
    UntranslatableCharacter { message: String, detail: String },
    #[error("{0}")]
    ProgramLimitExceeded(String),
    #[error("{0}")]
    FeatureNotSupported(String),
    #[error("{0}")]
    InvalidEscapeSequence(String),
    #[error("{0}")]
    SubstringError(String),
    #[error("{0}")]
    InvalidArgumentForPower(String),
    #[error("{0}")]
    InvalidArgumentForLog(String),
    #[error("stack depth limit exceeded")]
    StackDepthExceeded,
    /// Parameter `$index + 1` of a generic plan (`coord::generic`), whose
    /// value replaces it before the plan runs: an expression that needs
    /// the value while it is bound cannot have a generic plan.
    #[error("there is no value for parameter ${}", index + 1)]
    UnboundParameter { index: usize, ty: crate::repr::ScalarType, cast: bool },
    /// Bad array input; `detail` is Postgres's DETAIL line.
    #[error("malformed array literal: \"{text}\"")]
    MalformedArrayLiteral { text: String, detail: String },
    #[error("{0}")]
    ArraySubscript(String),
    /// A recursive query still produced new rows after `limit` rounds
    /// (see `dataflow::recursive::ITERATION_LIMIT`).
    #[error("recursive query \"{name}\" exceeded the iteration limit of {limit}")]
    RecursionLimit { name: String, limit: u64 },
    /// Binding a statement would copy more than `limit` operators into its
    /// plan: each correlated subquery repeats what it is correlated with,
    /// each outer join its inputs, so nested ones multiply the plan
    /// (`sql::subquery::MAX_COPIED_NODES`).
    #[error("statement is too complex: its plan would repeat more than {limit} operators")]
    PlanTooLarge { limit: usize },
    /// A name read into an OID alias type (`'t'::regclass`) that names
    /// nothing: `relation "t" does not exist` (42P01).
    #[error("{0}")]
    UndefinedTable(String),
    /// `type "x" does not exist`, `role "x" does not exist` (42704).
    #[error("{0}")]
    UndefinedObject(String),
    /// `function "f" does not exist` (42883).
    #[error("{0}")]
    UndefinedFunction(String),
    /// `schema "s" does not exist` (3F000).
    #[error("{0}")]
    InvalidSchemaName(String),
    /// A pattern `~` cannot compile (2201B).
    #[error("{0}")]
    InvalidRegularExpression(String),
    /// One allocation of `requested` bytes would take the server past its
    /// memory limit (`crate::memory`; 53200).
    #[error("out of memory")]
    OutOfMemory { requested: usize },
    /// The server went past its memory limit while a query's dataflow
    /// ran, and it was ended (`crate::memory::Budget`; 53200).
    #[error("out of memory")]
    MemoryExhausted,
    // (New variants go last: errors are serialized in view checkpoints.)
    /// A numeric value whose digits ripple's numeric (28 significant
    /// digits, scale at most 28) cannot all hold: refused rather than
    /// rounded to something else, as Postgres keeps every digit.
    #[error("numeric value {0} has more digits than ripple's numeric holds")]
    NumericPrecisionLost(String),
    /// A row multiplicity (how many copies of a row a query or view holds,
    /// or a count over them) outside the 64-bit range.
    #[error("row multiplicity out of range")]
    MultiplicityOverflow,
    /// A `SUBSCRIBE`'s changes waiting for its client passed the limit
    /// of this many bytes (`dataflow::subscribe`; 53400).
    #[error("subscription ended: its client fell behind by more than {0} bytes of changes")]
    SubscribeBufferFull(usize),
    /// A materialized view stopped when the server reached its memory
    /// limit while it was being built (`coord::memory`; 53200): what reads
    /// it, or anything built on it, fails with this until it is dropped.
    #[error("materialized view \"{name}\" was stopped: the server reached its memory limit while it was being built")]
    ViewStopped { name: String },
    /// What a read was reading (`what`: `relation "x"`) was dropped
    /// before the read was answered (40001).
    #[error("{what} was dropped while this query read it")]
    DroppedWhileRead { what: String },
}

impl EvalError {
    /// Optional DETAIL line.
    pub fn detail(&self) -> Option<String> {
        match self {
            EvalError::InvalidJson { detail }
            | EvalError::UntranslatableCharacter { detail, .. }
            | EvalError::MalformedArrayLiteral { detail, .. } => {
                Some(detail.clone())
            }
            EvalError::OutOfMemory { requested } => Some(format!(
                "Failed on request of size {requested} bytes: the server holds {} of its memory limit of {}.",
                crate::memory::show_size(crate::heap::allocated()),
                crate::memory::show_size(crate::memory::limit().unwrap_or(0)),
            )),
            EvalError::MemoryExhausted => Some(format!(
                "The server reached its memory limit of {} while this query ran, which was stopped to keep the server within it.",
                crate::memory::show_size(crate::memory::limit().unwrap_or(0)),
            )),
            _ => None,
        }
    }

    /// Optional HINT line.
    pub fn hint(&self) -> Option<String> {
        match self {
            EvalError::InvalidEscapeSequence(m) if m.starts_with("invalid escape string") => {
                Some("Escape string must be empty or one character.".into())
            }
            EvalError::DatetimeFieldOverflowMd(_) => {
                Some("Perhaps you need a different \"datestyle\" setting.".into())
            }
            EvalError::PlanTooLarge { .. } => Some(
                "Nested correlated subqueries (LATERAL, EXISTS, scalar subqueries that read outer columns) and outer joins each repeat the query they are nested in; un-nest some of them into joins or WITH queries.".into(),
            ),
            EvalError::RecursionLimit { .. } => Some(
                "The recursion does not terminate, or needs more rounds than ripple allows; add a condition that ends it.".into(),
            ),
            EvalError::NumericPrecisionLost(_) => Some(
                "ripple's numeric keeps 28 significant digits and at most 28 after the decimal point; cast to a numeric with a declared scale, e.g. numeric(38,10), to round the value.".into(),
            ),
            EvalError::MultiplicityOverflow => Some(
                "A join or a recursion produces more than 9223372036854775807 copies of one row; aggregate before joining, or bound the recursion.".into(),
            ),
            EvalError::SubscribeBufferFull(_) => Some(
                "Read the subscription's rows as they arrive, or raise the limit with SET subscribe_buffer_limit.".into(),
            ),
            EvalError::ViewStopped { name } => Some(format!(
                "Drop it (DROP MATERIALIZED VIEW \"{name}\") and create it again once the server has room: a larger --memory-limit, or less data."
            )),
            EvalError::DroppedWhileRead { .. } => Some("Run the query again.".into()),
            _ => None,
        }
    }

    pub fn sqlstate(&self) -> SqlState {
        match self {
            EvalError::DivisionByZero => SqlState::DivisionByZero,
            EvalError::OutOfRange(_)
            | EvalError::NumericFieldOverflow
            | EvalError::NumericPrecisionLost(_)
            | EvalError::MultiplicityOverflow => {
                SqlState::NumericValueOutOfRange
            }
            EvalError::InvalidTextRepresentation { ty, .. } => {
                if ty.starts_with("date") || ty.starts_with("timestamp") || ty == "interval" {
                    SqlState::InvalidDatetimeFormat
                } else {
                    SqlState::InvalidTextRepresentation
                }
            }
            EvalError::StringTooLong(_) => SqlState::StringDataRightTruncation,
            EvalError::DatetimeOverflow(_) | EvalError::DatetimeFieldOverflowMd(_) => SqlState::DatetimeFieldOverflow,
            EvalError::NotNull { .. } => SqlState::NotNullViolation,
            EvalError::MultipleRowsFromSubquery => SqlState::CardinalityViolation,
            EvalError::InvalidParameter(_) => SqlState::InvalidParameterValue,
            EvalError::Internal(_) => SqlState::InternalError,
            EvalError::IntervalFieldOverflow(_) => SqlState::IntervalFieldOverflow,
            EvalError::InvalidJson { .. } | EvalError::InvalidInput(_) => SqlState::InvalidTextRepresentation,
            EvalError::UntranslatableCharacter { .. } => SqlState::UntranslatableCharacter,
            EvalError::ProgramLimitExceeded(_) => SqlState::ProgramLimitExceeded,
            EvalError::FeatureNotSupported(_) => SqlState::FeatureNotSupported,
            EvalError::InvalidEscapeSequence(_) => SqlState::InvalidEscapeSequence,
            EvalError::SubstringError(_) => SqlState::SubstringError,
            EvalError::InvalidArgumentForPower(_) => SqlState::InvalidArgumentForPowerFunction,
            EvalError::InvalidArgumentForLog(_) => SqlState::InvalidArgumentForLogarithm,
            EvalError::StackDepthExceeded | EvalError::RecursionLimit { .. } | EvalError::PlanTooLarge { .. } => {
                SqlState::StatementTooComplex
            }
            EvalError::UnboundParameter { .. } => SqlState::UndefinedParameter,
            EvalError::MalformedArrayLiteral { .. } => SqlState::InvalidTextRepresentation,
            EvalError::ArraySubscript(_) => SqlState::ArraySubscriptError,
            EvalError::UndefinedTable(_) => SqlState::UndefinedTable,
            EvalError::UndefinedObject(_) => SqlState::UndefinedObject,
            EvalError::UndefinedFunction(_) => SqlState::UndefinedFunction,
            EvalError::InvalidSchemaName(_) => SqlState::InvalidSchemaName,
            EvalError::InvalidRegularExpression(_) => SqlState::InvalidRegularExpression,
            EvalError::OutOfMemory { .. } | EvalError::MemoryExhausted => SqlState::OutOfMemory,
            EvalError::SubscribeBufferFull(_) => SqlState::ConfigurationLimitExceeded,
            EvalError::ViewStopped { .. } => SqlState::OutOfMemory,
            EvalError::DroppedWhileRead { .. } => SqlState::SerializationFailure,
        }
    }
}

/// The error type of every layer of ripple. Each variant maps to one
/// SQLSTATE; the message is what the client sees.
#[derive(thiserror::Error, Clone, Debug)]
pub enum Error {
    #[error("{0}")]
    Syntax(String),
    #[error("relation \"{0}\" does not exist")]
    UndefinedTable(String),
    #[error("{0}")]
    UndefinedRelation(String),
    #[error("missing FROM-clause entry for table \"{0}\"")]
    MissingFromEntry(String),
    #[error("{0}")]
    UndefinedColumn(String),
    #[error("{0}")]
    UndefinedObject(String),
    #[error("{0}")]
    UndefinedFunction(String),
    #[error("column reference \"{0}\" is ambiguous")]
    AmbiguousColumn(String),
    #[error("{0}")]
    DatatypeMismatch(String),
    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),
    /// `ALTER ... SET SCHEMA` onto a name the schema has.
    #[error("relation \"{name}\" already exists in schema \"{schema}\"")]
    DuplicateTableInSchema { name: String, schema: String },
    /// `schema "s" already exists`.
    #[error("{0}")]
    DuplicateSchema(String),
    /// A name with a reserved prefix (`pg_` for schemas).
    #[error("{message}")]
    ReservedName { message: String, detail: String },
    #[error("{0}")]
    DuplicateObject(String),
    #[error("{0}")]
    Grouping(String),
    #[error("{0}")]
    Windowing(String),
    #[error("{0}")]
    DuplicateColumn(String),
    #[error("{0}")]
    DuplicateAlias(String),
    #[error("{0}")]
    InvalidRowCount(String),
    #[error("{0}")]
    WrongObjectType(String),
    #[error("{0}")]
    InvalidColumnReference(String),
    #[error("{message}")]
    DependentObjects { message: String, detail: String },
    /// `cannot drop schema pg_catalog because it is required by the
    /// database system` (2BP01, with no hint: CASCADE would not help).
    #[error("{0}")]
    RequiredBySystem(String),
    /// A write or a new unique index would make a unique key repeat.
    #[error("{message}")]
    UniqueViolation { message: String, detail: String },
    /// `multiple primary keys for table "t" are not allowed`.
    #[error("{0}")]
    InvalidTableDefinition(String),
    #[error("{0}")]
    FeatureNotSupported(String),
    /// A malformed recursive query (42P19).
    #[error("{0}")]
    InvalidRecursion(String),
    #[error("{0}")]
    ProtocolViolation(String),
    #[error("{0}")]
    InvalidTransactionState(String),
    /// A statement inside a transaction block that already failed (25P02).
    #[error("current transaction is aborted, commands ignored until end of transaction block")]
    InFailedTransaction,
    /// A write inside `BEGIN READ ONLY` (25006).
    #[error("{0}")]
    ReadOnlyTransaction(String),
    /// A statement that cannot run inside a transaction block (25001).
    #[error("{0}")]
    ActiveTransaction(String),
    /// A transaction that cannot be serialized with a concurrent one (40001);
    /// retrying it succeeds.
    #[error("{0}")]
    SerializationFailure(String),
    /// Transactions waiting for each other's key locks (40P01); the one
    /// that closed the cycle is refused, retrying it succeeds.
    #[error("deadlock detected")]
    DeadlockDetected { detail: String },
    #[error("{0}")]
    InvalidParameter(String),
    #[error("{0}")]
    UndefinedParameter(String),
    #[error("{0}")]
    IndeterminateDatatype(String),
    /// `function f(unknown) is not unique` / `operator is not unique: ...`.
    #[error("{0}")]
    AmbiguousFunction(String),
    /// `cannot cast type X to Y`.
    #[error("{0}")]
    CannotCoerce(String),
    #[error("{0}")]
    Eval(#[from] EvalError),
    #[error("storage error: {0}")]
    Storage(String),
    #[error("internal error: {0}")]
    Internal(String),
    #[error("canceling statement due to user request")]
    Canceled,
    #[error("canceling statement due to statement timeout")]
    StatementTimeout,
    /// The server went past its memory limit while the statement ran
    /// (53200); `what` says what was stopped.
    #[error("out of memory")]
    OutOfMemory { what: String },
    /// The data directory's filesystem has less free space than a write
    /// needs (`storage::space`; 53100).
    #[error("could not write to the data directory \"{dir}\": No space left on device (only {free} free; ripple keeps {reserve} free for its own work)")]
    DiskFull { dir: String, free: String, reserve: String },
    /// Malformed COPY input: wrong column count, bad quoting, a corrupt
    /// end marker (22P04); `hint` is Postgres's HINT line, if any.
    #[error("{message}")]
    BadCopyFormat { message: String, hint: Option<String> },
    /// A value in binary format that is not a valid value of its type
    /// (22P03): `incorrect binary data format`.
    #[error("{0}")]
    InvalidBinaryRepresentation(String),
    /// The client ended COPY FROM STDIN with CopyFail (57014).
    #[error("COPY from stdin failed: {0}")]
    CopyFromStdinFailed(String),
    /// Bytes that are not valid UTF-8 (22021).
    #[error("{0}")]
    CharacterNotInRepertoire(String),
    /// An error with Postgres's CONTEXT line saying where it happened
    /// (`COPY t, line 3, column b: "abc"`); everything else is the inner
    /// error's.
    #[error("{error}")]
    WithContext { error: Box<Error>, context: String },
    /// `schema "s" does not exist` (3F000).
    #[error("{0}")]
    InvalidSchemaName(String),
    /// A privilege the role lacks, or DDL and writes on the system
    /// catalog, which ripple computes (42501).
    #[error("{0}")]
    InsufficientPrivilege(String),
    /// `database "x" does not exist` (3D000).
    #[error("{0}")]
    InvalidCatalogName(String),
    /// A privilege that does not apply to the object (0LP01).
    #[error("{0}")]
    InvalidGrantOperation(String),
    /// `REVOKE` of a grant option others' privileges depend on, without
    /// CASCADE (2BP01).
    #[error("{0}")]
    DependentPrivileges(String),
    /// A statement that needs a transaction block outside one (25P01).
    #[error("{0}")]
    NoActiveTransaction(String),
    /// `savepoint "s" does not exist` (3B001).
    #[error("{0}")]
    InvalidSavepoint(String),
    /// `prepared statement "x" does not exist` (26000).
    #[error("{0}")]
    UndefinedPreparedStatement(String),
    /// `prepared statement "x" already exists` (42P05).
    #[error("{0}")]
    DuplicatePreparedStatement(String),
    /// `cursor "c" does not exist` (34000).
    #[error("{0}")]
    UndefinedCursor(String),
    /// `cursor "c" already exists` (42P03).
    #[error("{0}")]
    DuplicateCursor(String),
    /// An object not in the state the statement needs (55000): a backward
    /// fetch from a `NO SCROLL` cursor.
    #[error("{0}")]
    ObjectNotInPrerequisiteState(String),
    /// An object a statement may not change while it is in use (55006):
    /// `current user cannot be dropped`.
    #[error("{0}")]
    ObjectInUse(String),
    /// `SET` of a setting that is only reported (55P02): `server_version`,
    /// or `max_connections`, which the server's command line decides.
    #[error("{0}")]
    CantChangeRuntimeParam(String),
    /// A statement that would change one row twice (21000): `ON CONFLICT
    /// DO UPDATE command cannot affect row a second time`.
    #[error("{0}")]
    CardinalityViolation(String),
    /// A column that must not hold NULL does (23502), outside a write
    /// (`ALTER TABLE ... ADD PRIMARY KEY` over existing rows).
    #[error("{0}")]
    NotNullViolation(String),
}

impl Error {
    pub fn sqlstate(&self) -> SqlState {
        match self {
            Error::Syntax(_) => SqlState::SyntaxError,
            Error::UndefinedTable(_) | Error::MissingFromEntry(_) | Error::UndefinedRelation(_) => SqlState::UndefinedTable,
            Error::UndefinedColumn(_) => SqlState::UndefinedColumn,
            Error::UndefinedObject(_) => SqlState::UndefinedObject,
            Error::UndefinedFunction(_) => SqlState::UndefinedFunction,
            Error::AmbiguousColumn(_) => SqlState::AmbiguousColumn,
            Error::DatatypeMismatch(_) => SqlState::DatatypeMismatch,
            Error::DuplicateTable(_) | Error::DuplicateTableInSchema { .. } => SqlState::DuplicateTable,
            Error::DuplicateSchema(_) => SqlState::DuplicateSchema,
            Error::ReservedName { .. } => SqlState::ReservedName,
            Error::DuplicateObject(_) => SqlState::DuplicateObject,
            Error::Grouping(_) => SqlState::GroupingError,
            Error::Windowing(_) => SqlState::WindowingError,
            Error::DuplicateColumn(_) => SqlState::DuplicateColumn,
            Error::DuplicateAlias(_) => SqlState::DuplicateAlias,
            Error::InvalidRowCount(_) => SqlState::InvalidRowCountInLimitClause,
            Error::WrongObjectType(_) => SqlState::WrongObjectType,
            Error::InvalidColumnReference(_) => SqlState::InvalidColumnReference,
            Error::DependentObjects { .. } | Error::RequiredBySystem(_) | Error::DependentPrivileges(_) => {
                SqlState::DependentObjectsStillExist
            }
            Error::InvalidGrantOperation(_) => SqlState::InvalidGrantOperation,
            Error::InvalidCatalogName(_) => SqlState::InvalidCatalogName,
            Error::UniqueViolation { .. } => SqlState::UniqueViolation,
            Error::InvalidTableDefinition(_) => SqlState::InvalidTableDefinition,
            Error::FeatureNotSupported(_) => SqlState::FeatureNotSupported,
            Error::InvalidRecursion(_) => SqlState::InvalidRecursion,
            Error::ProtocolViolation(_) => SqlState::ProtocolViolation,
            Error::InvalidTransactionState(_) => SqlState::InvalidTransactionState,
            Error::InFailedTransaction => SqlState::InFailedSqlTransaction,
            Error::ReadOnlyTransaction(_) => SqlState::ReadOnlySqlTransaction,
            Error::ActiveTransaction(_) => SqlState::ActiveSqlTransaction,
            Error::SerializationFailure(_) => SqlState::SerializationFailure,
            Error::DeadlockDetected { .. } => SqlState::DeadlockDetected,
            Error::InvalidParameter(_) => SqlState::InvalidParameterValue,
            Error::UndefinedParameter(_) => SqlState::UndefinedParameter,
            Error::IndeterminateDatatype(_) => SqlState::IndeterminateDatatype,
            Error::AmbiguousFunction(_) => SqlState::AmbiguousFunction,
            Error::CannotCoerce(_) => SqlState::CannotCoerce,
            Error::Eval(e) => e.sqlstate(),
            Error::Storage(_) => SqlState::IoError,
            Error::Internal(_) => SqlState::InternalError,
            Error::Canceled | Error::StatementTimeout | Error::CopyFromStdinFailed(_) => SqlState::QueryCanceled,
            Error::OutOfMemory { .. } => SqlState::OutOfMemory,
            Error::DiskFull { .. } => SqlState::DiskFull,
            Error::BadCopyFormat { .. } => SqlState::BadCopyFileFormat,
            Error::InvalidBinaryRepresentation(_) => SqlState::InvalidBinaryRepresentation,
            Error::CharacterNotInRepertoire(_) => SqlState::CharacterNotInRepertoire,
            Error::WithContext { error, .. } => error.sqlstate(),
            Error::InvalidSchemaName(_) => SqlState::InvalidSchemaName,
            Error::InsufficientPrivilege(_) => SqlState::InsufficientPrivilege,
            Error::NoActiveTransaction(_) => SqlState::NoActiveSqlTransaction,
            Error::InvalidSavepoint(_) => SqlState::InvalidSavepointSpecification,
            Error::NotNullViolation(_) => SqlState::NotNullViolation,
            Error::CardinalityViolation(_) => SqlState::CardinalityViolation,
            Error::UndefinedPreparedStatement(_) => SqlState::InvalidSqlStatementName,
            Error::DuplicatePreparedStatement(_) => SqlState::DuplicatePreparedStatement,
            Error::UndefinedCursor(_) => SqlState::InvalidCursorName,
            Error::DuplicateCursor(_) => SqlState::DuplicateCursor,
            Error::ObjectNotInPrerequisiteState(_) => SqlState::ObjectNotInPrerequisiteState,
            Error::ObjectInUse(_) => SqlState::ObjectInUse,
            Error::CantChangeRuntimeParam(_) => SqlState::CantChangeRuntimeParam,
        }
    }

    /// Adds (or replaces) the CONTEXT line of an error.
    pub fn with_context(self, context: String) -> Error {
        let error = match self {
            Error::WithContext { error, .. } => error,
            other => Box::new(other),
        };
        Error::WithContext { error, context }
    }

    /// Optional CONTEXT line of the ErrorResponse.
    pub fn context(&self) -> Option<String> {
        match self {
            Error::WithContext { context, .. } => Some(context.clone()),
            _ => None,
        }
    }

    /// Optional DETAIL line of the ErrorResponse.
    pub fn detail(&self) -> Option<String> {
        match self {
            Error::DependentObjects { detail, .. }
            | Error::UniqueViolation { detail, .. }
            | Error::DeadlockDetected { detail }
            | Error::ReservedName { detail, .. } => Some(detail.clone()),
            Error::OutOfMemory { what } => Some(format!(
                "The server reached its memory limit of {} while {what}, which was stopped to keep the server within it.",
                crate::memory::show_size(crate::memory::limit().unwrap_or(0)),
            )),
            Error::Eval(e) => e.detail(),
            Error::WithContext { error, .. } => error.detail(),
            _ => None,
        }
    }

    /// Optional HINT line of the ErrorResponse.
    pub fn hint(&self) -> Option<String> {
        match self {
            Error::DependentObjects { .. } => {
                Some("Use DROP ... CASCADE to drop the dependent objects too.".into())
            }
            Error::DependentPrivileges(_) => Some("Use CASCADE to revoke them too.".into()),
            Error::DiskFull { .. } => Some(
                "Free disk space (DROP or TRUNCATE tables, or remove other files on that filesystem); writes resume once there is room.".into(),
            ),
            Error::OutOfMemory { .. }
            | Error::Eval(EvalError::OutOfMemory { .. })
            | Error::Eval(EvalError::MemoryExhausted) => Some(
                "Read fewer rows at a time (a cursor, LIMIT), or start the server with a larger --memory-limit.".into(),
            ),
            Error::DatatypeMismatch(m) if m.contains("\" cannot be cast automatically to type ") => {
                // column "c" cannot be cast automatically to type t
                let (column, ty) = m.strip_prefix("column \"")?.split_once("\" cannot be cast automatically to type ")?;
                Some(format!("You might need to specify \"USING {column}::{ty}\"."))
            }
            Error::UndefinedFunction(m) if m.starts_with("function ") && m.ends_with("does not exist") => Some(
                "No function matches the given name and argument types. You might need to add explicit type casts."
                    .into(),
            ),
            Error::UndefinedFunction(m) if m.starts_with("operator does not exist") => Some(
                "No operator matches the given name and argument types. You might need to add explicit type casts."
                    .into(),
            ),
            Error::AmbiguousFunction(m) if m.starts_with("function ") => Some(
                "Could not choose a best candidate function. You might need to add explicit type casts.".into(),
            ),
            Error::AmbiguousFunction(_) => Some(
                "Could not choose a best candidate operator. You might need to add explicit type casts.".into(),
            ),
            Error::DatatypeMismatch(m) if m.contains(" in non-recursive term but type ") => {
                Some("Cast the output of the non-recursive term to the correct type.".into())
            }
            Error::DatatypeMismatch(m) if m.contains(" but expression is of type ") => {
                Some("You will need to rewrite or cast the expression.".into())
            }
            Error::IndeterminateDatatype(m) if m == "cannot determine type of empty array" => {
                Some("Explicitly cast to the desired type, for example ARRAY[]::integer[].".into())
            }
            Error::WrongObjectType(m) if m.starts_with("cannot change schema of index") => {
                Some("Change the schema of the table instead.".into())
            }
            Error::ObjectNotInPrerequisiteState(m) if m == "cursor can only scan forward" => {
                Some("Declare it with SCROLL option to enable backward scan.".into())
            }
            Error::CardinalityViolation(m) if m.starts_with("ON CONFLICT DO UPDATE") => Some(
                "Ensure that no rows proposed for insertion within the same command have duplicate constrained values."
                    .into(),
            ),
            Error::Eval(e) => e.hint(),
            Error::BadCopyFormat { hint, .. } => hint.clone(),
            Error::WithContext { error, .. } => error.hint(),
            _ => None,
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
