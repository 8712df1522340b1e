//! SQL types: scalar types with their Postgres names and OIDs, column types
//! (scalar type plus nullability) and relation descriptions.

use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::fmt;

/// A Postgres scalar type supported by ripple.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ScalarType {
    Bool,
    Int16,
    Int32,
    Int64,
    Float32,
    Float64,
    /// `numeric(p, s)`; `None` for unconstrained `numeric`.
    Numeric { precision: Option<u8>, scale: Option<u8> },
    Text,
    /// `varchar(n)`; `None` for unbounded `varchar`.
    VarChar { max_len: Option<u32> },
    /// `char(n)` (Postgres `bpchar`): blank-padded to `len`.
    Char { len: u32 },
    Date,
    /// `timestamp(p) without time zone`; `precision` is the number of
    /// fractional-second digits kept (`None`: all six).
    Timestamp { precision: Option<u8> },
    /// `timestamp(p) with time zone`, stored as a UTC instant. The session
    /// time zone is always UTC, so values print with `+00`.
    TimestampTz { precision: Option<u8> },
    /// `interval`: months, days and microseconds, kept apart as Postgres does.
    Interval,
    Bytea,
    Uuid,
    Jsonb,
    /// A one-dimensional array (lower bound 1) of the element type, which is
    /// never itself an array.
    Array(Box<ScalarType>),
    /// `oid`: an unsigned 32-bit object identifier (held as `Datum::Int64`).
    Oid,
    /// The OID alias types (`regclass`, `regtype`, ...): an OID, held as
    /// `Datum::Int64`, whose text form is the object's name. Converting
    /// between the name and the OID needs the catalog, so the binder
    /// binds those conversions (`sql::catalog_funcs`); the values compare
    /// and sort as OIDs.
    Reg(RegKind),
    /// `name`: a 63-byte identifier string (a `Datum::Text`).
    Name,
    /// `"char"`: a single-byte internal type (a `Datum::Text`).
    PgChar,
    /// `int2vector`: the catalog's vector of smallints (`pg_index.indkey`).
    /// Held as a `Datum::Array` of `Int16`; it is an array whose text form
    /// is its elements separated by spaces (`1 2`) and whose subscripts
    /// start at 0.
    Int2Vector,
    /// `oidvector` (`pg_proc.proargtypes`): as `Int2Vector`, of OIDs.
    OidVector,
}

/// The OID alias types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum RegKind {
    Class,
    Type,
    Proc,
    Namespace,
    Role,
}

impl RegKind {
    pub fn typname(&self) -> &'static str {
        match self {
            RegKind::Class => "regclass",
            RegKind::Type => "regtype",
            RegKind::Proc => "regproc",
            RegKind::Namespace => "regnamespace",
            RegKind::Role => "regrole",
        }
    }

    pub fn oid(&self) -> u32 {
        match self {
            RegKind::Class => 2205,
            RegKind::Type => 2206,
            RegKind::Proc => 24,
            RegKind::Namespace => 4089,
            RegKind::Role => 4096,
        }
    }

    pub const ALL: [RegKind; 5] = [RegKind::Class, RegKind::Type, RegKind::Proc, RegKind::Namespace, RegKind::Role];
}

/// The element types ripple has, each with its array type's OID.
const ARRAY_OIDS: [(ScalarType, u32); 23] = [
    (ScalarType::Bool, 1000),
    (ScalarType::Int16, 1005),
    (ScalarType::Int32, 1007),
    (ScalarType::Int64, 1016),
    (ScalarType::Float32, 1021),
    (ScalarType::Float64, 1022),
    (ScalarType::Numeric { precision: None, scale: None }, 1231),
    (ScalarType::Text, 1009),
    (ScalarType::VarChar { max_len: None }, 1015),
    (ScalarType::Char { len: 1 }, 1014),
    (ScalarType::Date, 1182),
    (ScalarType::Timestamp { precision: None }, 1115),
    (ScalarType::TimestampTz { precision: None }, 1185),
    (ScalarType::Interval, 1187),
    (ScalarType::Bytea, 1001),
    (ScalarType::Uuid, 2951),
    (ScalarType::Jsonb, 3807),
    (ScalarType::Oid, 1028),
    (ScalarType::Name, 1003),
    (ScalarType::PgChar, 1002),
    (ScalarType::Reg(RegKind::Class), 2210),
    (ScalarType::Int2Vector, 1006),
    (ScalarType::OidVector, 1013),
];

/// Every type ripple has (unconstrained), element types then their
/// array types: the rows of `pg_type`.
pub fn builtin_types() -> Vec<ScalarType> {
    let mut out: Vec<ScalarType> = ARRAY_OIDS.iter().map(|(t, _)| t.clone()).collect();
    out.extend(RegKind::ALL.iter().skip(1).map(|k| ScalarType::Reg(*k)));
    out.extend(ARRAY_OIDS.iter().map(|(t, _)| t.array_of()));
    out
}

/// The largest fractional-second precision of timestamps and intervals.
pub const MAX_TIMESTAMP_PRECISION: u8 = 6;

/// Largest precision of `numeric` that ripple stores exactly (28 significant
/// decimal digits, the range of the `rust_decimal` representation).
pub const NUMERIC_MAX_PRECISION: u8 = 28;

impl ScalarType {
    /// Postgres type OID, as sent in RowDescription.
    pub fn oid(&self) -> u32 {
        match self {
            ScalarType::Bool => 16,
            ScalarType::Int16 => 21,
            ScalarType::Int32 => 23,
            ScalarType::Int64 => 20,
            ScalarType::Float32 => 700,
            ScalarType::Float64 => 701,
            ScalarType::Numeric { .. } => 1700,
            ScalarType::Text => 25,
            ScalarType::VarChar { .. } => 1043,
            ScalarType::Char { .. } => 1042,
            ScalarType::Date => 1082,
            ScalarType::Timestamp { .. } => 1114,
            ScalarType::TimestampTz { .. } => 1184,
            ScalarType::Interval => 1186,
            ScalarType::Bytea => 17,
            ScalarType::Uuid => 2950,
            ScalarType::Jsonb => 3802,
            ScalarType::Oid => 26,
            ScalarType::Reg(k) => k.oid(),
            ScalarType::Name => 19,
            ScalarType::PgChar => 18,
            ScalarType::Int2Vector => 22,
            ScalarType::OidVector => 30,
            ScalarType::Array(elem) => {
                let elem = elem.unconstrained();
                ARRAY_OIDS.iter().find(|(t, _)| *t == elem).map(|(_, oid)| *oid).unwrap_or(0)
            }
        }
    }

    /// The type for a Postgres OID, where ripple supports it.
    pub fn from_oid(oid: u32) -> Option<ScalarType> {
        Some(match oid {
            16 => ScalarType::Bool,
            21 => ScalarType::Int16,
            23 => ScalarType::Int32,
            20 => ScalarType::Int64,
            700 => ScalarType::Float32,
            701 => ScalarType::Float64,
            1700 => ScalarType::Numeric { precision: None, scale: None },
            25 => ScalarType::Text,
            1043 => ScalarType::VarChar { max_len: None },
            1042 => ScalarType::Char { len: 1 },
            1082 => ScalarType::Date,
            1114 => ScalarType::Timestamp { precision: None },
            1184 => ScalarType::TimestampTz { precision: None },
            1186 => ScalarType::Interval,
            17 => ScalarType::Bytea,
            2950 => ScalarType::Uuid,
            3802 => ScalarType::Jsonb,
            26 => ScalarType::Oid,
            19 => ScalarType::Name,
            18 => ScalarType::PgChar,
            22 => ScalarType::Int2Vector,
            30 => ScalarType::OidVector,
            oid if RegKind::ALL.iter().any(|k| k.oid() == oid) => {
                ScalarType::Reg(*RegKind::ALL.iter().find(|k| k.oid() == oid)?)
            }
            oid => {
                let (elem, _) = ARRAY_OIDS.iter().find(|(_, o)| *o == oid)?;
                ScalarType::Array(Box::new(elem.clone()))
            }
        })
    }

    /// The type modifier sent in RowDescription (`atttypmod`), -1 if none
    /// (an array's is its element's).
    pub fn typmod(&self) -> i32 {
        match self {
            ScalarType::Array(elem) => elem.typmod(),
            ScalarType::Numeric { precision: Some(p), scale } => {
                (((*p as i32) << 16) | scale.unwrap_or(0) as i32) + 4
            }
            ScalarType::VarChar { max_len: Some(n) } => *n as i32 + 4,
            ScalarType::Char { len } => *len as i32 + 4,
            ScalarType::Timestamp { precision: Some(p) } | ScalarType::TimestampTz { precision: Some(p) } => *p as i32,
            _ => -1,
        }
    }

    /// The size Postgres reports for the type (`typlen`), -1 for varlena.
    pub fn typlen(&self) -> i16 {
        match self {
            ScalarType::Bool => 1,
            ScalarType::Int16 => 2,
            ScalarType::Int32 | ScalarType::Float32 | ScalarType::Date | ScalarType::Oid | ScalarType::Reg(_) => 4,
            ScalarType::PgChar => 1,
            ScalarType::Name => 64,
            ScalarType::Int64
            | ScalarType::Float64
            | ScalarType::Timestamp { .. }
            | ScalarType::TimestampTz { .. } => 8,
            ScalarType::Interval | ScalarType::Uuid => 16,
            _ => -1,
        }
    }

    pub fn is_integer(&self) -> bool {
        matches!(self, ScalarType::Int16 | ScalarType::Int32 | ScalarType::Int64)
    }

    pub fn is_float(&self) -> bool {
        matches!(self, ScalarType::Float32 | ScalarType::Float64)
    }

    pub fn is_numeric(&self) -> bool {
        matches!(self, ScalarType::Numeric { .. })
    }

    /// Integer, numeric or floating point.
    pub fn is_number(&self) -> bool {
        self.is_integer() || self.is_float() || self.is_numeric()
    }

    /// text, varchar, char, name or "char".
    pub fn is_string(&self) -> bool {
        matches!(
            self,
            ScalarType::Text | ScalarType::VarChar { .. } | ScalarType::Char { .. } | ScalarType::Name | ScalarType::PgChar
        )
    }

    /// `oid` or an OID alias type (`regclass`...).
    pub fn is_oid(&self) -> bool {
        matches!(self, ScalarType::Oid | ScalarType::Reg(_))
    }

    /// The same type without modifiers (`numeric(10,2)` → `numeric`), used to
    /// compare types for operator resolution.
    pub fn unconstrained(&self) -> ScalarType {
        match self {
            ScalarType::Numeric { .. } => ScalarType::Numeric { precision: None, scale: None },
            ScalarType::VarChar { .. } => ScalarType::VarChar { max_len: None },
            ScalarType::Char { .. } => ScalarType::Char { len: 1 },
            ScalarType::Timestamp { .. } => ScalarType::Timestamp { precision: None },
            ScalarType::TimestampTz { .. } => ScalarType::TimestampTz { precision: None },
            ScalarType::Array(elem) => ScalarType::Array(Box::new(elem.unconstrained())),
            other => other.clone(),
        }
    }

    /// The array type whose elements are of this type.
    pub fn array_of(&self) -> ScalarType {
        ScalarType::Array(Box::new(self.clone()))
    }

    /// The element type of an array type (also of the catalog's vector
    /// types, which are arrays apart from their text form and subscripts).
    pub fn element_type(&self) -> Option<&ScalarType> {
        match self {
            ScalarType::Array(elem) => Some(elem),
            ScalarType::Int2Vector => Some(&ScalarType::Int16),
            ScalarType::OidVector => Some(&ScalarType::Oid),
            _ => None,
        }
    }

    /// `int2vector` or `oidvector`.
    pub fn is_vector(&self) -> bool {
        matches!(self, ScalarType::Int2Vector | ScalarType::OidVector)
    }

    pub fn is_array(&self) -> bool {
        matches!(self, ScalarType::Array(_))
    }

    /// Whether a value of the type family needs its type modifier applied
    /// when stored as this type (`numeric(p,s)`, `varchar(n)`, `char(n)`,
    /// also as array elements).
    pub fn has_length_or_scale(&self) -> bool {
        match self {
            ScalarType::Numeric { precision: Some(_), .. }
            | ScalarType::VarChar { max_len: Some(_) }
            | ScalarType::Char { .. } => true,
            ScalarType::Array(elem) => elem.has_length_or_scale(),
            _ => false,
        }
    }

    /// Whether two types are the same type apart from modifiers.
    pub fn same_family(&self, other: &ScalarType) -> bool {
        self.unconstrained() == other.unconstrained()
    }

    /// date, timestamp or timestamptz.
    pub fn is_datetime(&self) -> bool {
        matches!(self, ScalarType::Date | ScalarType::Timestamp { .. } | ScalarType::TimestampTz { .. })
    }

    /// The name of the type in `pg_type` (`int4`, `timestamptz`...), which is
    /// also the column name Postgres gives a cast such as `x::int`. For an
    /// array type it is the element's name, the column name of `x::int[]`.
    pub fn typname(&self) -> &'static str {
        match self {
            ScalarType::Array(elem) => elem.typname(),
            ScalarType::Bool => "bool",
            ScalarType::Int16 => "int2",
            ScalarType::Int32 => "int4",
            ScalarType::Int64 => "int8",
            ScalarType::Float32 => "float4",
            ScalarType::Float64 => "float8",
            ScalarType::Numeric { .. } => "numeric",
            ScalarType::Text => "text",
            ScalarType::VarChar { .. } => "varchar",
            ScalarType::Char { .. } => "bpchar",
            ScalarType::Date => "date",
            ScalarType::Timestamp { .. } => "timestamp",
            ScalarType::TimestampTz { .. } => "timestamptz",
            ScalarType::Interval => "interval",
            ScalarType::Bytea => "bytea",
            ScalarType::Uuid => "uuid",
            ScalarType::Jsonb => "jsonb",
            ScalarType::Oid => "oid",
            ScalarType::Reg(k) => k.typname(),
            ScalarType::Name => "name",
            ScalarType::PgChar => "char",
            ScalarType::Int2Vector => "int2vector",
            ScalarType::OidVector => "oidvector",
        }
    }

    /// Postgres's name of the type family, as used in error messages
    /// (`integer[]` for an array).
    pub fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            ScalarType::Array(elem) => return Cow::Owned(format!("{}[]", elem.name())),
            ScalarType::Bool => "boolean",
            ScalarType::Int16 => "smallint",
            ScalarType::Int32 => "integer",
            ScalarType::Int64 => "bigint",
            ScalarType::Float32 => "real",
            ScalarType::Float64 => "double precision",
            ScalarType::Numeric { .. } => "numeric",
            ScalarType::Text => "text",
            ScalarType::VarChar { .. } => "character varying",
            ScalarType::Char { .. } => "character",
            ScalarType::Date => "date",
            ScalarType::Timestamp { .. } => "timestamp without time zone",
            ScalarType::TimestampTz { .. } => "timestamp with time zone",
            ScalarType::Interval => "interval",
            ScalarType::Bytea => "bytea",
            ScalarType::Uuid => "uuid",
            ScalarType::Jsonb => "jsonb",
            ScalarType::Oid => "oid",
            ScalarType::Reg(k) => k.typname(),
            ScalarType::Name => "name",
            ScalarType::PgChar => "\"char\"",
            ScalarType::Int2Vector => "int2vector",
            ScalarType::OidVector => "oidvector",
        })
    }
}

impl fmt::Display for ScalarType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarType::Numeric { precision: Some(p), scale } => {
                write!(f, "numeric({},{})", p, scale.unwrap_or(0))
            }
            ScalarType::VarChar { max_len: Some(n) } => write!(f, "character varying({n})"),
            ScalarType::Char { len } => write!(f, "character({len})"),
            ScalarType::Timestamp { precision: Some(p) } => write!(f, "timestamp({p}) without time zone"),
            ScalarType::TimestampTz { precision: Some(p) } => write!(f, "timestamp({p}) with time zone"),
            ScalarType::Array(elem) => write!(f, "{elem}[]"),
            other => f.write_str(&other.name()),
        }
    }
}

/// The type of a column: its scalar type and whether it may hold NULL.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ColumnType {
    pub scalar: ScalarType,
    pub nullable: bool,
}

impl ColumnType {
    pub fn new(scalar: ScalarType, nullable: bool) -> Self {
        ColumnType { scalar, nullable }
    }
}

/// Names and types of the columns of a relation.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationDesc {
    pub names: Vec<String>,
    pub types: Vec<ColumnType>,
}

impl RelationDesc {
    pub fn new(names: Vec<String>, types: Vec<ColumnType>) -> Self {
        debug_assert_eq!(names.len(), types.len());
        RelationDesc { names, types }
    }

    pub fn arity(&self) -> usize {
        self.types.len()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &ColumnType)> {
        self.names.iter().zip(self.types.iter())
    }
}
