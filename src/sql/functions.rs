//! Built-in functions and operators: name resolution and typing with
//! Postgres's rules (`func_select_candidate`: exact matches, implicit
//! coercions, preferred types, unknown literals resolved by category),
//! Postgres's error messages for missing (42883) and ambiguous (42725)
//! functions and operators, and the binding of the SQL forms with their
//! own syntax (LIKE/ILIKE, SUBSTRING, POSITION, TRIM, EXTRACT, typed
//! literals, INTERVAL literals, AT TIME ZONE, now()/current_date...).
//!
//! Owns: which functions exist, their signatures and result types, and
//! how a call becomes a `ScalarExpr`. Evaluation lives in
//! `crate::expr::func`.
//!
//! Statement time: `now()` and friends bind to
//! `VariadicFunc::StatementTime` whose argument is the binder's statement
//! timestamp; `finish_plan` resets it to the statement's time in every
//! plan (so a view used by a query sees the query's time) and refuses it in
//! materialized views.

use crate::expr::func::{BinaryFunc, StatementTimeFunc, UnaryFunc, VariadicFunc};
use crate::expr::ScalarExpr;
use crate::repr::interval::{IntervalField, IntervalRange};
use crate::repr::{Datum, Error, Interval, ScalarType};
use crate::sql::binder::Binder;
use crate::sql::expr::{Bound, ExprCtx, Unknown};
use crate::sql::plan::Plan;
use crate::sql::types::{category, implicitly_castable, is_preferred, scalar_type_from_sql, type_name};
use chrono::{DateTime, Utc};
use sqlparser::ast::{self, DateTimeField, Expr, TrimWhereField, Value};

/// A parameter of a candidate signature.
#[derive(Clone, Debug, PartialEq)]
enum Param {
    T(ScalarType),
    /// `anynonarray`/`anyelement`: any type (ripple has no arrays).
    Any,
}

/// The result type of a signature.
#[derive(Clone, Debug)]
enum Ret {
    T(ScalarType),
    /// The (unconstrained) type of argument `i`.
    Arg(usize),
}

/// How a resolved call becomes an expression.
#[derive(Clone, Debug)]
enum Imp {
    Unary(UnaryFunc),
    Binary(BinaryFunc),
    Variadic(VariadicFunc),
    Build(fn(Vec<ScalarExpr>) -> ScalarExpr),
    /// A binary operator applied after casting both operands to a type
    /// (Postgres's cross-type operators such as `float84pl`).
    BinaryAs(BinaryFunc, ScalarType),
}

#[derive(Clone, Debug)]
struct Sig {
    params: Vec<Param>,
    ret: Ret,
    imp: Imp,
}

fn numeric() -> ScalarType {
    ScalarType::Numeric { precision: None, scale: None }
}
fn ts() -> ScalarType {
    ScalarType::Timestamp { precision: None }
}
fn tstz() -> ScalarType {
    ScalarType::TimestampTz { precision: None }
}

fn sig(params: &[ScalarType], ret: ScalarType, imp: Imp) -> Sig {
    Sig { params: params.iter().cloned().map(Param::T).collect(), ret: Ret::T(ret), imp }
}

fn sig_arg0(params: &[ScalarType], imp: Imp) -> Sig {
    Sig { params: params.iter().cloned().map(Param::T).collect(), ret: Ret::Arg(0), imp }
}

fn lit_text(s: &str) -> ScalarExpr {
    ScalarExpr::Literal(Datum::Text(s.into()), ScalarType::Text)
}

fn lit_int(v: i32) -> ScalarExpr {
    ScalarExpr::Literal(Datum::Int32(v), ScalarType::Int32)
}

fn arg(args: &mut [ScalarExpr], i: usize) -> ScalarExpr {
    std::mem::replace(&mut args[i], ScalarExpr::null(ScalarType::Text))
}

const NUMBERS: [ScalarType; 6] = [
    ScalarType::Int16,
    ScalarType::Int32,
    ScalarType::Int64,
    ScalarType::Float32,
    ScalarType::Float64,
    ScalarType::Numeric { precision: None, scale: None },
];

/// The candidate signatures of a function, by name.
fn function_candidates(name: &str) -> Option<Vec<Sig>> {
    use ScalarType as T;
    let u = |f: UnaryFunc| Imp::Unary(f);
    let b = |f: BinaryFunc| Imp::Binary(f);
    let v = |f: VariadicFunc| Imp::Variadic(f);
    let float_numeric = |f: UnaryFunc| vec![sig_arg0(&[T::Float64], u(f.clone())), sig_arg0(&[numeric()], u(f))];
    Some(match name {
        "abs" => NUMBERS.iter().map(|t| sig_arg0(std::slice::from_ref(t), u(UnaryFunc::Abs))).collect(),
        "sqrt" => float_numeric(UnaryFunc::Sqrt),
        "exp" => float_numeric(UnaryFunc::Exp),
        "ln" => float_numeric(UnaryFunc::Ln),
        "log10" => float_numeric(UnaryFunc::Log10),
        "log" => vec![
            sig_arg0(&[T::Float64], u(UnaryFunc::Log10)),
            sig_arg0(&[numeric()], u(UnaryFunc::Log10)),
            sig(&[numeric(), numeric()], numeric(), b(BinaryFunc::LogBase)),
        ],
        "cbrt" => vec![sig_arg0(&[T::Float64], u(UnaryFunc::Cbrt))],
        "floor" => float_numeric(UnaryFunc::Floor),
        "ceil" | "ceiling" => float_numeric(UnaryFunc::Ceil),
        "sign" => float_numeric(UnaryFunc::Sign),
        "round" => vec![
            sig_arg0(&[T::Float64], u(UnaryFunc::Round)),
            sig_arg0(&[numeric()], Imp::Build(|mut a| arg(&mut a, 0).call_binary(lit_int(0), BinaryFunc::RoundScale))),
            sig(&[numeric(), T::Int32], numeric(), b(BinaryFunc::RoundScale)),
        ],
        "trunc" => vec![
            sig_arg0(&[T::Float64], u(UnaryFunc::Trunc)),
            sig_arg0(&[numeric()], Imp::Build(|mut a| arg(&mut a, 0).call_binary(lit_int(0), BinaryFunc::TruncScale))),
            sig(&[numeric(), T::Int32], numeric(), b(BinaryFunc::TruncScale)),
        ],
        "power" | "pow" => vec![
            sig(&[T::Float64, T::Float64], T::Float64, b(BinaryFunc::Power)),
            sig(&[numeric(), numeric()], numeric(), b(BinaryFunc::Power)),
        ],
        "mod" => [T::Int16, T::Int32, T::Int64, numeric()]
            .into_iter()
            .map(|t| sig_arg0(&[t.clone(), t], b(BinaryFunc::Mod)))
            .collect(),
        "div" => vec![sig(&[numeric(), numeric()], numeric(), b(BinaryFunc::DivTrunc))],
        "pi" => vec![sig(&[], T::Float64, Imp::Build(|_| {
            ScalarExpr::Literal(Datum::Float64(std::f64::consts::PI), ScalarType::Float64)
        }))],
        "length" => vec![
            sig(&[T::Text], T::Int32, u(UnaryFunc::Length)),
            sig(&[T::Char { len: 1 }], T::Int32, Imp::Build(|mut a| {
                arg(&mut a, 0).call_unary(UnaryFunc::BpcharToText).call_unary(UnaryFunc::Length)
            })),
            sig(&[T::Bytea], T::Int32, u(UnaryFunc::Length)),
        ],
        "char_length" | "character_length" => vec![
            sig(&[T::Text], T::Int32, u(UnaryFunc::Length)),
            sig(&[T::Char { len: 1 }], T::Int32, Imp::Build(|mut a| {
                arg(&mut a, 0).call_unary(UnaryFunc::BpcharToText).call_unary(UnaryFunc::Length)
            })),
        ],
        "octet_length" => vec![
            sig(&[T::Text], T::Int32, u(UnaryFunc::OctetLength)),
            sig(&[T::Char { len: 1 }], T::Int32, u(UnaryFunc::OctetLength)),
            sig(&[T::Bytea], T::Int32, u(UnaryFunc::OctetLength)),
        ],
        "lower" => vec![sig(&[T::Text], T::Text, u(UnaryFunc::Lower))],
        "upper" => vec![sig(&[T::Text], T::Text, u(UnaryFunc::Upper))],
        "initcap" => vec![sig(&[T::Text], T::Text, u(UnaryFunc::Initcap))],
        "reverse" => vec![sig(&[T::Text], T::Text, u(UnaryFunc::Reverse))],
        "ascii" => vec![sig(&[T::Text], T::Int32, u(UnaryFunc::Ascii))],
        "chr" => vec![sig(&[T::Int32], T::Text, u(UnaryFunc::Chr))],
        "btrim" | "ltrim" | "rtrim" => {
            let f = match name {
                "btrim" => BinaryFunc::Btrim,
                "ltrim" => BinaryFunc::Ltrim,
                _ => BinaryFunc::Rtrim,
            };
            let one: fn(Vec<ScalarExpr>) -> ScalarExpr = match name {
                "btrim" => |mut a| arg(&mut a, 0).call_binary(lit_text(" "), BinaryFunc::Btrim),
                "ltrim" => |mut a| arg(&mut a, 0).call_binary(lit_text(" "), BinaryFunc::Ltrim),
                _ => |mut a| arg(&mut a, 0).call_binary(lit_text(" "), BinaryFunc::Rtrim),
            };
            vec![sig(&[T::Text], T::Text, Imp::Build(one)), sig(&[T::Text, T::Text], T::Text, b(f))]
        }
        "substr" | "substring" => vec![
            sig(&[T::Text, T::Int32], T::Text, v(VariadicFunc::Substr)),
            sig(&[T::Text, T::Int32, T::Int32], T::Text, v(VariadicFunc::Substr)),
            sig(&[T::Bytea, T::Int32], T::Bytea, v(VariadicFunc::Substr)),
            sig(&[T::Bytea, T::Int32, T::Int32], T::Bytea, v(VariadicFunc::Substr)),
        ],
        "strpos" => vec![sig(&[T::Text, T::Text], T::Int32, b(BinaryFunc::StrPos))],
        "position" => vec![sig(&[T::Text, T::Text], T::Int32, Imp::Build(|mut a| {
            let needle = arg(&mut a, 0);
            arg(&mut a, 1).call_binary(needle, BinaryFunc::StrPos)
        }))],
        "replace" => vec![sig(&[T::Text, T::Text, T::Text], T::Text, v(VariadicFunc::Replace))],
        "translate" => vec![sig(&[T::Text, T::Text, T::Text], T::Text, v(VariadicFunc::Translate))],
        "split_part" => vec![sig(&[T::Text, T::Text, T::Int32], T::Text, v(VariadicFunc::SplitPart))],
        "left" => vec![sig(&[T::Text, T::Int32], T::Text, b(BinaryFunc::Left))],
        "right" => vec![sig(&[T::Text, T::Int32], T::Text, b(BinaryFunc::Right))],
        "repeat" => vec![sig(&[T::Text, T::Int32], T::Text, b(BinaryFunc::Repeat))],
        "lpad" | "rpad" => {
            let f = if name == "lpad" { VariadicFunc::Lpad } else { VariadicFunc::Rpad };
            vec![sig(&[T::Text, T::Int32], T::Text, v(f.clone())), sig(&[T::Text, T::Int32, T::Text], T::Text, v(f))]
        }
        "starts_with" => vec![sig(&[T::Text, T::Text], T::Bool, b(BinaryFunc::StartsWith))],
        "encode" => vec![sig(&[T::Bytea, T::Text], T::Text, b(BinaryFunc::Encode))],
        "decode" => vec![sig(&[T::Text, T::Text], T::Bytea, b(BinaryFunc::Decode))],
        "date_part" => vec![
            sig(&[T::Text, tstz()], T::Float64, b(BinaryFunc::DatePart)),
            sig(&[T::Text, ts()], T::Float64, b(BinaryFunc::DatePart)),
            sig(&[T::Text, T::Interval], T::Float64, b(BinaryFunc::DatePart)),
            sig(&[T::Text, T::Date], T::Float64, b(BinaryFunc::DatePart)),
        ],
        "extract" => vec![
            sig(&[T::Text, tstz()], numeric(), b(BinaryFunc::Extract)),
            sig(&[T::Text, ts()], numeric(), b(BinaryFunc::Extract)),
            sig(&[T::Text, T::Interval], numeric(), b(BinaryFunc::Extract)),
            sig(&[T::Text, T::Date], numeric(), b(BinaryFunc::Extract)),
        ],
        "date_trunc" => vec![
            sig(&[T::Text, tstz()], tstz(), b(BinaryFunc::DateTrunc)),
            sig(&[T::Text, ts()], ts(), b(BinaryFunc::DateTrunc)),
            sig(&[T::Text, T::Interval], T::Interval, b(BinaryFunc::DateTrunc)),
        ],
        "age" => vec![
            sig(&[tstz(), tstz()], T::Interval, b(BinaryFunc::Age)),
            sig(&[ts(), ts()], T::Interval, b(BinaryFunc::Age)),
        ],
        "timezone" => vec![
            sig(&[T::Text, tstz()], ts(), b(BinaryFunc::Timezone)),
            sig(&[T::Text, ts()], tstz(), b(BinaryFunc::Timezone)),
        ],
        "to_char" => vec![
            sig(&[tstz(), T::Text], T::Text, b(BinaryFunc::ToChar)),
            sig(&[ts(), T::Text], T::Text, b(BinaryFunc::ToChar)),
        ],
        "justify_days" => vec![sig(&[T::Interval], T::Interval, u(UnaryFunc::JustifyDays))],
        "justify_hours" => vec![sig(&[T::Interval], T::Interval, u(UnaryFunc::JustifyHours))],
        "justify_interval" => vec![sig(&[T::Interval], T::Interval, u(UnaryFunc::JustifyInterval))],
        "to_timestamp" => vec![sig(&[T::Float64], tstz(), u(UnaryFunc::ToTimestamp))],
        "jsonb_typeof" => vec![sig(&[T::Jsonb], T::Text, u(UnaryFunc::JsonbTypeof))],
        "jsonb_array_length" => vec![sig(&[T::Jsonb], T::Int32, u(UnaryFunc::JsonbArrayLength))],
        "to_jsonb" => vec![Sig { params: vec![Param::Any], ret: Ret::T(T::Jsonb), imp: u(UnaryFunc::ToJsonb) }],
        _ => return None,
    })
}

/// The candidate signatures of a binary operator.
fn operator_candidates(op: &str) -> Vec<Sig> {
    use ScalarType as T;
    let b = |f: BinaryFunc| Imp::Binary(f);
    let same_numbers = |f: BinaryFunc, types: &[ScalarType]| -> Vec<Sig> {
        types.iter().map(|t| sig_arg0(&[t.clone(), t.clone()], b(f))).collect()
    };
    // int2/int4/int8 and float4/float8 mixed operators.
    let cross = |f: BinaryFunc| -> Vec<Sig> {
        let pairs = [
            (T::Int16, T::Int32, T::Int32),
            (T::Int32, T::Int16, T::Int32),
            (T::Int16, T::Int64, T::Int64),
            (T::Int64, T::Int16, T::Int64),
            (T::Int32, T::Int64, T::Int64),
            (T::Int64, T::Int32, T::Int64),
            (T::Float32, T::Float64, T::Float64),
            (T::Float64, T::Float32, T::Float64),
        ];
        pairs.into_iter().map(|(x, y, z)| sig(&[x, y], z.clone(), Imp::BinaryAs(f, z))).collect()
    };
    match op {
        "+" => {
            let mut v = same_numbers(BinaryFunc::Add, &NUMBERS);
            v.extend(cross(BinaryFunc::Add));
            v.extend([
                sig(&[T::Date, T::Int32], T::Date, b(BinaryFunc::Add)),
                sig(&[T::Int32, T::Date], T::Date, b(BinaryFunc::Add)),
                sig(&[T::Date, T::Interval], ts(), b(BinaryFunc::Add)),
                sig(&[T::Interval, T::Date], ts(), b(BinaryFunc::Add)),
                sig(&[ts(), T::Interval], ts(), b(BinaryFunc::Add)),
                sig(&[T::Interval, ts()], ts(), b(BinaryFunc::Add)),
                sig(&[tstz(), T::Interval], tstz(), b(BinaryFunc::Add)),
                sig(&[T::Interval, tstz()], tstz(), b(BinaryFunc::Add)),
                sig(&[T::Interval, T::Interval], T::Interval, b(BinaryFunc::Add)),
            ]);
            v
        }
        "-" => {
            let mut v = same_numbers(BinaryFunc::Sub, &NUMBERS);
            v.extend(cross(BinaryFunc::Sub));
            v.extend([
                sig(&[T::Date, T::Date], T::Int32, b(BinaryFunc::Sub)),
                sig(&[T::Date, T::Int32], T::Date, b(BinaryFunc::Sub)),
                sig(&[T::Date, T::Interval], ts(), b(BinaryFunc::Sub)),
                sig(&[ts(), ts()], T::Interval, b(BinaryFunc::Sub)),
                sig(&[ts(), T::Interval], ts(), b(BinaryFunc::Sub)),
                sig(&[tstz(), tstz()], T::Interval, b(BinaryFunc::Sub)),
                sig(&[tstz(), T::Interval], tstz(), b(BinaryFunc::Sub)),
                sig(&[T::Interval, T::Interval], T::Interval, b(BinaryFunc::Sub)),
                sig(&[T::Jsonb, T::Text], T::Jsonb, b(BinaryFunc::Sub)),
                sig(&[T::Jsonb, T::Int32], T::Jsonb, b(BinaryFunc::Sub)),
            ]);
            v
        }
        "*" => {
            let mut v = same_numbers(BinaryFunc::Mul, &NUMBERS);
            v.extend(cross(BinaryFunc::Mul));
            v.extend([
                sig(&[T::Interval, T::Float64], T::Interval, b(BinaryFunc::Mul)),
                sig(&[T::Float64, T::Interval], T::Interval, b(BinaryFunc::Mul)),
            ]);
            v
        }
        "/" => {
            let mut v = same_numbers(BinaryFunc::Div, &NUMBERS);
            v.extend(cross(BinaryFunc::Div));
            v.push(sig(&[T::Interval, T::Float64], T::Interval, b(BinaryFunc::Div)));
            v
        }
        "%" => same_numbers(BinaryFunc::Mod, &[T::Int16, T::Int32, T::Int64, numeric()]),
        "&" => same_numbers(BinaryFunc::BitAnd, &[T::Int16, T::Int32, T::Int64]),
        "|" => same_numbers(BinaryFunc::BitOr, &[T::Int16, T::Int32, T::Int64]),
        "#" => same_numbers(BinaryFunc::BitXor, &[T::Int16, T::Int32, T::Int64]),
        "<<" | ">>" => {
            let f = if op == "<<" { BinaryFunc::ShiftLeft } else { BinaryFunc::ShiftRight };
            [T::Int16, T::Int32, T::Int64].into_iter().map(|t| sig(&[t.clone(), T::Int32], t, b(f))).collect()
        }
        "^" => vec![
            sig(&[T::Float64, T::Float64], T::Float64, b(BinaryFunc::Power)),
            sig(&[numeric(), numeric()], numeric(), b(BinaryFunc::Power)),
        ],
        "||" => vec![
            sig(&[T::Text, T::Text], T::Text, b(BinaryFunc::Concat)),
            Sig { params: vec![Param::T(T::Text), Param::Any], ret: Ret::T(T::Text), imp: b(BinaryFunc::Concat) },
            Sig { params: vec![Param::Any, Param::T(T::Text)], ret: Ret::T(T::Text), imp: b(BinaryFunc::Concat) },
            sig(&[T::Bytea, T::Bytea], T::Bytea, b(BinaryFunc::Concat)),
            sig(&[T::Jsonb, T::Jsonb], T::Jsonb, b(BinaryFunc::Concat)),
        ],
        "~~" => vec![
            sig(&[T::Text, T::Text], T::Bool, b(BinaryFunc::Like)),
            sig(&[T::Char { len: 1 }, T::Text], T::Bool, b(BinaryFunc::Like)),
        ],
        "~~*" => vec![
            sig(&[T::Text, T::Text], T::Bool, b(BinaryFunc::ILike)),
            sig(&[T::Char { len: 1 }, T::Text], T::Bool, b(BinaryFunc::ILike)),
        ],
        "~" | "~*" => {
            let f = BinaryFunc::RegexMatch { case_insensitive: op == "~*" };
            vec![sig(&[T::Text, T::Text], T::Bool, b(f)), sig(&[T::Char { len: 1 }, T::Text], T::Bool, b(f))]
        }
        "!~" | "!~*" => {
            let build: fn(Vec<ScalarExpr>) -> ScalarExpr = if op == "!~" {
                |mut a| {
                    let r = arg(&mut a, 1);
                    arg(&mut a, 0).call_binary(r, BinaryFunc::RegexMatch { case_insensitive: false }).call_unary(UnaryFunc::Not)
                }
            } else {
                |mut a| {
                    let r = arg(&mut a, 1);
                    arg(&mut a, 0).call_binary(r, BinaryFunc::RegexMatch { case_insensitive: true }).call_unary(UnaryFunc::Not)
                }
            };
            vec![sig(&[T::Text, T::Text], T::Bool, Imp::Build(build))]
        }
        "->" => vec![
            sig(&[T::Jsonb, T::Text], T::Jsonb, b(BinaryFunc::JsonbGet)),
            sig(&[T::Jsonb, T::Int32], T::Jsonb, b(BinaryFunc::JsonbGet)),
        ],
        "->>" => vec![
            sig(&[T::Jsonb, T::Text], T::Text, b(BinaryFunc::JsonbGetText)),
            sig(&[T::Jsonb, T::Int32], T::Text, b(BinaryFunc::JsonbGetText)),
        ],
        "@>" => vec![sig(&[T::Jsonb, T::Jsonb], T::Bool, b(BinaryFunc::JsonbContains))],
        "<@" => vec![sig(&[T::Jsonb, T::Jsonb], T::Bool, b(BinaryFunc::JsonbContainedBy))],
        "?" => vec![sig(&[T::Jsonb, T::Text], T::Bool, b(BinaryFunc::JsonbExists))],
        _ => vec![],
    }
}

/// Whether a call of `imp` can be NULL although no argument is.
fn may_return_null(imp: &Imp) -> bool {
    matches!(imp, Imp::Binary(BinaryFunc::JsonbGet | BinaryFunc::JsonbGetText))
}

enum Resolve {
    Found(usize),
    NotFound,
    Ambiguous,
}

fn param_category(p: &Param) -> char {
    match p {
        Param::T(t) => category(t),
        Param::Any => 'P',
    }
}

fn param_preferred(p: &Param) -> bool {
    matches!(p, Param::T(t) if is_preferred(t))
}

fn exact(p: &Param, a: &ScalarType) -> bool {
    matches!(p, Param::T(t) if t.same_family(a))
}

fn coercible(a: &Option<ScalarType>, p: &Param) -> bool {
    match (a, p) {
        (None, _) | (_, Param::Any) => true,
        (Some(a), Param::T(t)) => a.same_family(t) || implicitly_castable(a, t),
    }
}

/// Postgres's function/operator resolution (`func_select_candidate`).
fn resolve(cands: &[Sig], args: &[Option<ScalarType>], binary_op: bool) -> Resolve {
    let n = args.len();
    let cands: Vec<(usize, &Sig)> = cands.iter().enumerate().filter(|(_, s)| s.params.len() == n).collect();
    // An unknown operand of a binary operator is assumed to have the other
    // operand's type, for an exact match.
    if binary_op && n == 2 {
        if let (Some(t), None) | (None, Some(t)) = (&args[0], &args[1]) {
            if let Some((i, _)) = cands.iter().find(|(_, s)| exact(&s.params[0], t) && exact(&s.params[1], t)) {
                return Resolve::Found(*i);
            }
        }
    }
    if args.iter().all(|a| a.is_some()) {
        if let Some((i, _)) = cands
            .iter()
            .find(|(_, s)| s.params.iter().zip(args).all(|(p, a)| a.as_ref().is_some_and(|a| exact(p, a))))
        {
            return Resolve::Found(*i);
        }
    }
    let mut live: Vec<(usize, &Sig)> =
        cands.into_iter().filter(|(_, s)| s.params.iter().zip(args).all(|(p, a)| coercible(a, p))).collect();
    match live.len() {
        0 => return Resolve::NotFound,
        1 => return Resolve::Found(live[0].0),
        _ => {}
    }
    // Most exact matches on known inputs.
    let score = |s: &Sig| s.params.iter().zip(args).filter(|(p, a)| a.as_ref().is_some_and(|a| exact(p, a))).count();
    let best = live.iter().map(|(_, s)| score(s)).max().unwrap_or(0);
    live.retain(|(_, s)| score(s) == best);
    if live.len() == 1 {
        return Resolve::Found(live[0].0);
    }
    // Most exact-or-preferred types at known inputs.
    let score = |s: &Sig| {
        s.params
            .iter()
            .zip(args)
            .filter(|(p, a)| a.as_ref().is_some_and(|a| exact(p, a) || param_preferred(p)))
            .count()
    };
    let best = live.iter().map(|(_, s)| score(s)).max().unwrap_or(0);
    live.retain(|(_, s)| score(s) == best);
    if live.len() == 1 {
        return Resolve::Found(live[0].0);
    }
    if args.iter().all(|a| a.is_some()) {
        return Resolve::Ambiguous;
    }
    // Unknown inputs: choose a category per position (string wins).
    let mut resolved = true;
    let mut slots: Vec<Option<(char, bool)>> = vec![None; n];
    for i in 0..n {
        if args[i].is_some() {
            continue;
        }
        let mut cat: Option<char> = None;
        let mut has_pref = false;
        let mut conflict = false;
        for (_, s) in &live {
            let c = param_category(&s.params[i]);
            let pref = param_preferred(&s.params[i]);
            match cat {
                None => {
                    cat = Some(c);
                    has_pref = pref;
                }
                Some(k) if k == c => has_pref |= pref,
                Some(_) => {
                    if c == 'S' {
                        cat = Some(c);
                        has_pref = pref;
                    } else {
                        conflict = true;
                    }
                }
            }
        }
        if conflict && cat != Some('S') {
            resolved = false;
            break;
        }
        slots[i] = cat.map(|c| (c, has_pref));
    }
    if resolved {
        let keep: Vec<(usize, &Sig)> = live
            .iter()
            .filter(|(_, s)| {
                (0..n).all(|i| match (&args[i], slots[i]) {
                    (None, Some((c, pref))) => {
                        param_category(&s.params[i]) == c && (!pref || param_preferred(&s.params[i]))
                    }
                    _ => true,
                })
            })
            .cloned()
            .collect();
        if keep.len() == 1 {
            return Resolve::Found(keep[0].0);
        }
        if !keep.is_empty() {
            live = keep;
        }
    }
    // All known inputs of one type: assume the unknowns have it too.
    let known: Vec<&ScalarType> = args.iter().flatten().collect();
    if !known.is_empty() && known.iter().all(|t| t.same_family(known[0])) {
        let assumed: Vec<Option<ScalarType>> = args.iter().map(|_| Some(known[0].clone())).collect();
        let fits: Vec<usize> = live
            .iter()
            .filter(|(_, s)| s.params.iter().zip(&assumed).all(|(p, a)| coercible(a, p)))
            .map(|(i, _)| *i)
            .collect();
        if fits.len() == 1 {
            return Resolve::Found(fits[0]);
        }
    }
    Resolve::Ambiguous
}

pub(crate) fn type_list(args: &[Option<ScalarType>]) -> String {
    args.iter().map(type_name).collect::<Vec<_>>().join(", ")
}

/// The binder's view of a statement-time function call.
fn statement_time(f: StatementTimeFunc, now: DateTime<Utc>) -> ScalarExpr {
    ScalarExpr::CallVariadic {
        func: VariadicFunc::StatementTime(f),
        exprs: vec![ScalarExpr::Literal(Datum::TimestampTz(now), tstz())],
    }
}

/// Sets the statement time in every statement-time call of a plan, and
/// refuses such calls in a materialized view (whose contents must not
/// depend on when they were computed).
pub fn finish_plan(plan: &mut Plan, now: DateTime<Utc>) -> Result<(), Error> {
    let mut found = None;
    let mut visit = |e: &mut ScalarExpr| {
        if found.is_none() {
            found = e.statement_time_func();
        }
        e.set_statement_time(now);
    };
    match plan {
        Plan::CreateView { query, materialized, .. } => {
            query.visit_scalars_mut(&mut visit);
            if *materialized {
                if let Some(f) = found {
                    return Err(Error::FeatureNotSupported(format!(
                        "{} is not allowed in a materialized view",
                        f.name()
                    )));
                }
            }
        }
        Plan::Select { query, .. } | Plan::Explain { query, .. } | Plan::CopyTo { query, .. } => {
            query.visit_scalars_mut(&mut visit)
        }
        Plan::Insert { source, returning, on_conflict, .. } => {
            source.visit_scalars_mut(&mut visit);
            if let Some(u) = on_conflict.as_mut().and_then(|oc| oc.update.as_mut()) {
                u.selection.visit_scalars_mut(&mut visit);
            }
            if let Some(r) = returning {
                r.query.visit_scalars_mut(&mut visit);
            }
        }
        Plan::Update { selection, returning, .. } | Plan::Delete { selection, returning, .. } => {
            selection.visit_scalars_mut(&mut visit);
            if let Some(r) = returning {
                r.query.visit_scalars_mut(&mut visit);
            }
        }
        Plan::SetVariable { name, value } if name == "timezone" || name == "time zone" => {
            check_time_zone_setting(value)?;
        }
        _ => {}
    }
    Ok(())
}

/// The session time zone is always UTC: `SET TimeZone` accepts only names
/// and offsets meaning UTC, so no client believes it got another zone.
fn check_time_zone_setting(value: &str) -> Result<(), Error> {
    let v = value.trim().trim_matches('\'');
    if v.eq_ignore_ascii_case("local") || v.eq_ignore_ascii_case("default") {
        return Ok(());
    }
    match crate::repr::datetime::parse_time_zone(v) {
        Ok(0) => Ok(()),
        _ => Err(Error::FeatureNotSupported(format!(
            "time zone \"{v}\" is not supported: the session time zone is always UTC"
        ))),
    }
}

/// The qualifier field of an INTERVAL literal.
fn interval_field(f: &DateTimeField) -> Result<IntervalField, Error> {
    Ok(match f {
        DateTimeField::Year | DateTimeField::Years => IntervalField::Year,
        DateTimeField::Month | DateTimeField::Months => IntervalField::Month,
        DateTimeField::Day | DateTimeField::Days => IntervalField::Day,
        DateTimeField::Hour | DateTimeField::Hours => IntervalField::Hour,
        DateTimeField::Minute | DateTimeField::Minutes => IntervalField::Minute,
        DateTimeField::Second | DateTimeField::Seconds => IntervalField::Second,
        other => return Err(Error::Syntax(format!("syntax error at or near \"{other}\""))),
    })
}

/// The unit name of an EXTRACT field, as `date_part` spells it.
fn extract_unit(f: &DateTimeField) -> String {
    match f {
        DateTimeField::Custom(id) => id.value.to_lowercase(),
        DateTimeField::Week(_) => "week".into(),
        other => other.to_string().to_lowercase(),
    }
}

impl Binder<'_> {
    fn unknown_literal(&self, b: &Bound) -> bool {
        b.ty.is_none() && matches!(b.unknown, Some(Unknown::Text(_)) | Some(Unknown::Null))
    }

    /// Coerces an argument to a parameter type, keeping it as is when it
    /// already is of that type's family (so typmods and char padding stay).
    fn coerce_to_param(&mut self, b: Bound, to: &ScalarType) -> Result<ScalarExpr, Error> {
        match &b.ty {
            Some(t) if t.same_family(to) => Ok(b.expr),
            Some(t) if t.is_string() && !matches!(t, ScalarType::Char { .. }) && *to == ScalarType::Text => Ok(b.expr),
            _ => self.coerce(b, to),
        }
    }

    /// Coerces resolved arguments and builds the call.
    fn build_call(&mut self, sig: &Sig, args: Vec<Bound>) -> Result<Bound, Error> {
        let nullable = args.iter().any(|a| a.nullable) || may_return_null(&sig.imp);
        let mut arg_types = Vec::new();
        let mut exprs = Vec::new();
        for (p, b) in sig.params.iter().zip(args) {
            match p {
                Param::T(t) => {
                    arg_types.push(t.clone());
                    exprs.push(self.coerce_to_param(b, t)?);
                }
                Param::Any => {
                    let t = b.ty.clone().unwrap_or(ScalarType::Text);
                    arg_types.push(t.clone());
                    let x = self.coerce(b, &t)?;
                    // text || anynonarray: the value's text form.
                    let x = if matches!(sig.imp, Imp::Binary(BinaryFunc::Concat)) && !t.is_string() {
                        x.call_unary(UnaryFunc::Cast { to: ScalarType::Text, explicit: true })
                    } else if matches!(t, ScalarType::Char { .. }) && matches!(sig.imp, Imp::Binary(BinaryFunc::Concat)) {
                        x.call_unary(UnaryFunc::BpcharToText)
                    } else {
                        x
                    };
                    exprs.push(x);
                }
            }
        }
        let ret = match &sig.ret {
            Ret::T(t) => t.clone(),
            Ret::Arg(i) => arg_types.get(*i).map(|t| t.unconstrained()).unwrap_or(ScalarType::Text),
        };
        let expr = match &sig.imp {
            Imp::Unary(f) => {
                let mut it = exprs.into_iter();
                it.next().ok_or_else(|| Error::Internal("missing argument".into()))?.call_unary(f.clone())
            }
            Imp::Binary(f) => {
                let mut it = exprs.into_iter();
                let l = it.next().ok_or_else(|| Error::Internal("missing argument".into()))?;
                let r = it.next().ok_or_else(|| Error::Internal("missing argument".into()))?;
                l.call_binary(r, *f)
            }
            Imp::Variadic(f) => ScalarExpr::CallVariadic { func: f.clone(), exprs },
            Imp::Build(f) => f(exprs),
            Imp::BinaryAs(f, t) => {
                let mut it = exprs.into_iter().zip(&arg_types).map(|(x, xt)| {
                    if xt == t { x } else { x.call_unary(UnaryFunc::Cast { to: t.clone(), explicit: false }) }
                });
                let l = it.next().ok_or_else(|| Error::Internal("missing argument".into()))?;
                let r = it.next().ok_or_else(|| Error::Internal("missing argument".into()))?;
                l.call_binary(r, *f)
            }
        };
        Ok(Bound { expr, ty: Some(ret), nullable, unknown: None })
    }

    /// Resolves and binds a call of a built-in function whose arguments are
    /// already bound.
    pub(crate) fn bind_builtin(&mut self, name: &str, args: Vec<Bound>) -> Result<Bound, Error> {
        let args = match self.bind_catalog_function(name, args) {
            Ok(result) => return result,
            Err(args) => args,
        };
        let types: Vec<Option<ScalarType>> = args.iter().map(|b| b.ty.clone()).collect();
        let not_found = || Error::UndefinedFunction(format!("function {name}({}) does not exist", type_list(&types)));
        // Functions with their own argument handling.
        let time = |f| Ok(Bound::typed_pub(statement_time(f, self.now), f.output_type(), false));
        match (name, args.len()) {
            ("now", 0) => return time(StatementTimeFunc::Now),
            ("current_timestamp", 0) => return time(StatementTimeFunc::CurrentTimestamp),
            ("current_date", 0) => return time(StatementTimeFunc::CurrentDate),
            ("localtimestamp", 0) => return time(StatementTimeFunc::LocalTimestamp),
            ("transaction_timestamp", 0) => return time(StatementTimeFunc::TransactionTimestamp),
            ("statement_timestamp", 0) => return time(StatementTimeFunc::StatementTimestamp),
            ("current_timestamp" | "localtimestamp", 1) => {
                let f = if name == "localtimestamp" {
                    StatementTimeFunc::LocalTimestamp
                } else {
                    StatementTimeFunc::CurrentTimestamp
                };
                let p = match args[0].expr.eval(&[]) {
                    Ok(Datum::Int32(p)) if (0..=6).contains(&p) && args[0].ty == Some(ScalarType::Int32) => p as u8,
                    _ => return Err(not_found()),
                };
                let to = match f.output_type() {
                    ScalarType::Timestamp { .. } => ScalarType::Timestamp { precision: Some(p) },
                    _ => ScalarType::TimestampTz { precision: Some(p) },
                };
                let x = statement_time(f, self.now).call_unary(UnaryFunc::Cast { to: to.clone(), explicit: true });
                return Ok(Bound::typed_pub(x, to, false));
            }
            ("current_time" | "localtime", _) => {
                return Err(Error::FeatureNotSupported("type time is not supported yet".into()));
            }
            // json_build_* build jsonb: ripple has no json type (clients
            // read both as JSON; key order and duplicate keys are jsonb's).
            ("concat" | "concat_ws" | "jsonb_build_array" | "jsonb_build_object" | "json_build_array" | "json_build_object", _) => {
                if (name == "concat_ws" || name == "concat") && args.is_empty() {
                    return Err(not_found());
                }
                let func = match name {
                    "concat" => VariadicFunc::Concat,
                    "concat_ws" => VariadicFunc::ConcatWs,
                    "jsonb_build_array" | "json_build_array" => VariadicFunc::JsonbBuildArray,
                    _ => VariadicFunc::JsonbBuildObject,
                };
                let sep_nullable = args.first().map(|a| a.nullable).unwrap_or(false);
                let mut exprs = Vec::new();
                for (i, b) in args.into_iter().enumerate() {
                    let t = if name == "concat_ws" && i == 0 {
                        ScalarType::Text
                    } else {
                        b.ty.clone().unwrap_or(ScalarType::Text)
                    };
                    exprs.push(self.coerce_to_param(b, &t)?);
                }
                if func == VariadicFunc::JsonbBuildObject && exprs.len() % 2 != 0 {
                    return Err(Error::InvalidParameter("argument list must have even number of elements".into()));
                }
                let (ty, nullable) = match func {
                    VariadicFunc::Concat => (ScalarType::Text, false),
                    VariadicFunc::ConcatWs => (ScalarType::Text, sep_nullable),
                    _ => (ScalarType::Jsonb, false),
                };
                return Ok(Bound::typed_pub(ScalarExpr::CallVariadic { func, exprs }, ty, nullable));
            }
            ("age", 1) => {
                // age(x) = age(current_date at midnight, x).
                let b = args.into_iter().next().ok_or_else(not_found)?;
                let t = match &b.ty {
                    Some(ScalarType::Timestamp { .. }) => ts(),
                    None | Some(ScalarType::TimestampTz { .. }) | Some(ScalarType::Date) => tstz(),
                    _ => return Err(not_found()),
                };
                let nullable = b.nullable;
                let x = self.coerce_to_param(b, &t)?;
                let today = statement_time(StatementTimeFunc::CurrentDate, self.now)
                    .call_unary(UnaryFunc::Cast { to: t.clone(), explicit: false });
                return Ok(Bound::typed_pub(today.call_binary(x, BinaryFunc::Age), ScalarType::Interval, nullable));
            }
            ("pg_typeof", 1) => {
                // A type name (Postgres returns regtype, which prints so).
                let name = type_name(&args[0].ty);
                return Ok(Bound::typed_pub(lit_text(&name), ScalarType::Text, false));
            }
            (name, _) if crate::sql::arrays::is_array_function(name) => return self.bind_array_function(name, args),
            (name, _) if crate::sql::table_funcs::is_table_function(name) => {
                return Err(Error::FeatureNotSupported(format!(
                    "set-returning function {name}() is supported in FROM and as a whole select-list item, not inside an expression"
                )));
            }
            ("array_fill" | "array_dims" | "string_to_array", _) => {
                return Err(Error::FeatureNotSupported(format!("{name} is not supported yet")));
            }
            ("to_jsonb", 1) if args[0].ty.is_none() && self.unknown_literal(&args[0]) => {
                return Err(Error::DatatypeMismatch(
                    "could not determine polymorphic type because input has type unknown".into(),
                ));
            }
            _ => {}
        }
        let Some(cands) = function_candidates(name) else {
            return Err(not_found());
        };
        match resolve(&cands, &types, false) {
            Resolve::Found(i) => self.build_call(&cands[i], args),
            Resolve::NotFound => Err(not_found()),
            Resolve::Ambiguous => {
                Err(Error::AmbiguousFunction(format!("function {name}({}) is not unique", type_list(&types))))
            }
        }
    }

    /// Resolves and binds a binary operator on bound operands.
    pub(crate) fn bind_operator(&mut self, op: &str, l: Bound, r: Bound) -> Result<Bound, Error> {
        if [&l.ty, &r.ty].iter().any(|t| t.as_ref().is_some_and(|t| t.is_array())) {
            return self.bind_array_operator(op, l, r);
        }
        let types = vec![l.ty.clone(), r.ty.clone()];
        let cands = operator_candidates(op);
        match resolve(&cands, &types, true) {
            Resolve::Found(i) => self.build_call(&cands[i], vec![l, r]),
            Resolve::NotFound => Err(Error::UndefinedFunction(format!(
                "operator does not exist: {} {op} {}",
                type_name(&types[0]),
                type_name(&types[1])
            ))),
            Resolve::Ambiguous => Err(Error::AmbiguousFunction(format!(
                "operator is not unique: {} {op} {}",
                type_name(&types[0]),
                type_name(&types[1])
            ))),
        }
    }

    /// `a [NOT] LIKE|ILIKE b [ESCAPE e]` (and `~~`, `~~*`, `!~~`, `!~~*`).
    pub(crate) fn bind_like(
        &mut self,
        expr: &Expr,
        pattern: &Expr,
        escape: Option<&Expr>,
        case_insensitive: bool,
        negated: bool,
        ctx: &mut ExprCtx,
    ) -> Result<Bound, Error> {
        let l = self.bind_expr(expr, ctx)?;
        let mut r = self.bind_expr(pattern, ctx)?;
        if let Some(e) = escape {
            let e = self.bind_expr(e, ctx)?;
            let nullable = r.nullable || e.nullable;
            let p = self.coerce_text(r)?;
            let e = self.coerce_text(e)?;
            r = Bound::typed_pub(p.call_binary(e, BinaryFunc::LikeEscape), ScalarType::Text, nullable);
        }
        let b = self.bind_operator(if case_insensitive { "~~*" } else { "~~" }, l, r)?;
        Ok(if negated { Bound::typed_pub(b.expr.call_unary(UnaryFunc::Not), ScalarType::Bool, b.nullable) } else { b })
    }

    fn coerce_text(&mut self, b: Bound) -> Result<ScalarExpr, Error> {
        match &b.ty {
            None => self.coerce(b, &ScalarType::Text),
            Some(t) if t.is_string() => self.coerce_to_param(b, &ScalarType::Text),
            Some(t) => Err(Error::UndefinedFunction(format!("function like_escape({}, text) does not exist", t.name()))),
        }
    }

    /// Binds the function-like forms with special syntax. `None` if `e` is
    /// not one of them.
    pub(crate) fn bind_special_form(&mut self, e: &Expr, ctx: &mut ExprCtx) -> Option<Result<Bound, Error>> {
        Some(match e {
            Expr::Like { negated, any, expr, pattern, escape_char } | Expr::ILike { negated, any, expr, pattern, escape_char } => {
                if *any {
                    return Some(Err(Error::FeatureNotSupported("LIKE ANY is not supported".into())));
                }
                let ci = matches!(e, Expr::ILike { .. });
                self.bind_like(expr, pattern, escape_char.as_deref(), ci, *negated, ctx)
            }
            Expr::SimilarTo { .. } => Err(Error::FeatureNotSupported("SIMILAR TO is not supported yet".into())),
            Expr::Substring { expr, substring_from, substring_for, .. } => (|| {
                let mut args = vec![self.bind_expr(expr, ctx)?];
                match (substring_from, substring_for) {
                    (Some(f), count) => {
                        args.push(self.bind_expr(f, ctx)?);
                        if let Some(c) = count {
                            args.push(self.bind_expr(c, ctx)?);
                        }
                    }
                    (None, Some(c)) => {
                        args.push(Bound::typed_pub(lit_int(1), ScalarType::Int32, false));
                        args.push(self.bind_expr(c, ctx)?);
                    }
                    (None, None) => {}
                }
                self.bind_builtin("substring", args)
            })(),
            Expr::Position { expr, r#in } => (|| {
                let needle = self.bind_expr(expr, ctx)?;
                let hay = self.bind_expr(r#in, ctx)?;
                self.bind_builtin("position", vec![needle, hay])
            })(),
            Expr::Trim { trim_where, trim_what, expr, trim_characters } => (|| {
                let name = match trim_where {
                    Some(TrimWhereField::Leading) => "ltrim",
                    Some(TrimWhereField::Trailing) => "rtrim",
                    _ => "btrim",
                };
                let mut args = vec![self.bind_expr(expr, ctx)?];
                if let Some(w) = trim_what {
                    args.push(self.bind_expr(w, ctx)?);
                } else if let Some(chars) = trim_characters {
                    for c in chars {
                        args.push(self.bind_expr(c, ctx)?);
                    }
                }
                self.bind_builtin(name, args)
            })(),
            Expr::Extract { field, expr, .. } => (|| {
                let unit = extract_unit(field);
                let x = self.bind_expr(expr, ctx)?;
                // The field is a string constant of unknown type, as in
                // Postgres's rewrite to extract('field', x).
                let u = Bound { expr: lit_text(&unit), ty: None, nullable: false, unknown: Some(Unknown::Text(unit)) };
                self.bind_builtin("extract", vec![u, x])
            })(),
            Expr::Ceil { expr, field } | Expr::Floor { expr, field } => (|| {
                let name = if matches!(e, Expr::Ceil { .. }) { "ceil" } else { "floor" };
                if !matches!(field, ast::CeilFloorKind::DateTimeField(DateTimeField::NoDateTime)) {
                    return Err(Error::FeatureNotSupported(format!("{name} with a second argument is not supported")));
                }
                let x = self.bind_expr(expr, ctx)?;
                self.bind_builtin(name, vec![x])
            })(),
            Expr::AtTimeZone { timestamp, time_zone } => (|| {
                let t = self.bind_expr(timestamp, ctx)?;
                let z = self.bind_expr(time_zone, ctx)?;
                self.bind_builtin("timezone", vec![z, t])
            })(),
            Expr::Interval(iv) => self.bind_interval_literal(iv),
            Expr::TypedString(t) => (|| {
                let ty = scalar_type_from_sql(&t.data_type)?;
                let text = match &t.value.value {
                    Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => s.clone(),
                    other => other.to_string(),
                };
                let d = Datum::parse(&text, &ty.unconstrained())?.apply_typmod(&ty, true)?;
                Ok(Bound::typed_pub(ScalarExpr::Literal(d, ty.clone()), ty, false))
            })(),
            _ => return None,
        })
    }

    /// `INTERVAL '1 day'`, `INTERVAL '3' MONTH`, `INTERVAL '1-2' YEAR TO MONTH`.
    fn bind_interval_literal(&mut self, iv: &ast::Interval) -> Result<Bound, Error> {
        let text = match iv.value.as_ref() {
            Expr::Value(v) => match &v.value {
                Value::SingleQuotedString(s) | Value::EscapedStringLiteral(s) => s.clone(),
                Value::Number(n, _) => n.clone(),
                other => other.to_string(),
            },
            Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match expr.as_ref() {
                Expr::Value(v) => format!("-{}", v.value),
                _ => return Err(Error::FeatureNotSupported("INTERVAL of an expression is not supported".into())),
            },
            _ => return Err(Error::FeatureNotSupported("INTERVAL of an expression is not supported".into())),
        };
        let range = match (&iv.leading_field, &iv.last_field) {
            (None, None) => None,
            (Some(f), None) => {
                let f = interval_field(f)?;
                Some(IntervalRange { from: f, to: f })
            }
            (Some(f), Some(l)) => Some(IntervalRange { from: interval_field(f)?, to: interval_field(l)? }),
            (None, Some(l)) => {
                let l = interval_field(l)?;
                Some(IntervalRange { from: l, to: l })
            }
        };
        if iv.fractional_seconds_precision.is_some() {
            return Err(Error::FeatureNotSupported("interval precision is not supported yet".into()));
        }
        let v = Interval::parse(&text, range)?;
        Ok(Bound::typed_pub(ScalarExpr::Literal(Datum::Interval(v), ScalarType::Interval), ScalarType::Interval, false))
    }
}

impl Bound {
    /// A bound expression of a known type.
    pub(crate) fn typed_pub(expr: ScalarExpr, ty: ScalarType, nullable: bool) -> Bound {
        Bound { expr, ty: Some(ty), nullable, unknown: None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ScalarType as T;

    fn pick(op: &str, args: &[Option<ScalarType>]) -> Result<ScalarType, &'static str> {
        let cands = operator_candidates(op);
        match resolve(&cands, args, true) {
            Resolve::Found(i) => Ok(match &cands[i].ret {
                Ret::T(t) => t.clone(),
                Ret::Arg(j) => match &cands[i].params[*j] {
                    Param::T(t) => t.clone(),
                    Param::Any => T::Text,
                },
            }),
            Resolve::NotFound => Err("not found"),
            Resolve::Ambiguous => Err("ambiguous"),
        }
    }

    fn pick_fn(name: &str, args: &[Option<ScalarType>]) -> Result<Vec<Param>, &'static str> {
        let cands = function_candidates(name).ok_or("no such function")?;
        match resolve(&cands, args, false) {
            Resolve::Found(i) => Ok(cands[i].params.clone()),
            Resolve::NotFound => Err("not found"),
            Resolve::Ambiguous => Err("ambiguous"),
        }
    }

    #[test]
    fn operator_resolution_follows_postgres() {
        assert_eq!(pick("+", &[Some(T::Int16), Some(T::Int32)]), Ok(T::Int32));
        assert_eq!(pick("+", &[Some(T::Int32), Some(T::Float32)]), Ok(T::Float64));
        assert_eq!(pick("+", &[Some(T::Float32), Some(T::Float32)]), Ok(T::Float32));
        assert_eq!(pick("+", &[Some(T::Int32), None]), Ok(T::Int32));
        assert_eq!(pick("+", &[None, None]), Err("ambiguous"));
        assert_eq!(pick("+", &[Some(T::Date), None]), Err("ambiguous"));
        assert_eq!(pick("+", &[Some(T::Date), Some(T::Int32)]), Ok(T::Date));
        assert_eq!(pick("+", &[Some(ts()), Some(T::Interval)]), Ok(ts()));
        assert_eq!(pick("-", &[Some(tstz()), None]), Ok(T::Interval));
        assert_eq!(pick("||", &[None, None]), Ok(T::Text));
        assert_eq!(pick("||", &[None, Some(T::Int32)]), Ok(T::Text));
        assert_eq!(pick("||", &[Some(T::Int32), Some(T::Int32)]), Err("not found"));
        assert_eq!(pick("||", &[Some(T::Jsonb), None]), Ok(T::Jsonb));
        assert_eq!(pick("~~", &[Some(T::VarChar { max_len: None }), None]), Ok(T::Bool));
        assert_eq!(pick("->>", &[Some(T::Jsonb), Some(T::Int32)]), Ok(T::Text));
        assert_eq!(pick("%", &[Some(T::Float64), Some(T::Int32)]), Err("not found"));
    }

    #[test]
    fn function_resolution_follows_postgres() {
        // Integer arguments go to the preferred float8 variant.
        assert_eq!(pick_fn("round", &[Some(T::Int32)]), Ok(vec![Param::T(T::Float64)]));
        assert_eq!(pick_fn("round", &[Some(numeric())]), Ok(vec![Param::T(numeric())]));
        assert_eq!(pick_fn("round", &[Some(T::Int32), Some(T::Int32)]), Ok(vec![Param::T(numeric()), Param::T(T::Int32)]));
        assert_eq!(pick_fn("date_part", &[None, Some(T::Date)]), Ok(vec![Param::T(T::Text), Param::T(T::Date)]));
        assert_eq!(pick_fn("extract", &[Some(T::Text), None]), Err("ambiguous"));
        assert_eq!(pick_fn("date_trunc", &[None, None]), Err("ambiguous"));
        assert_eq!(pick_fn("date_trunc", &[None, Some(T::Date)]), Ok(vec![Param::T(T::Text), Param::T(tstz())]));
        assert_eq!(pick_fn("length", &[None]), Ok(vec![Param::T(T::Text)]));
        assert_eq!(pick_fn("upper", &[Some(T::Int32)]), Err("not found"));
    }
}
