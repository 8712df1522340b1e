//! Array functions and operators with Postgres semantics, on one-dimensional
//! arrays with lower bound 1 (`repr::array` owns the values themselves):
//!
//! - subscripts `a[i]` and slices `a[lo:hi]`: NULL (or an empty slice) out
//!   of range, NULL for a NULL subscript;
//! - `array_length`, `array_lower`, `array_upper`, `array_ndims`: NULL for an
//!   empty array or another dimension than 1; `cardinality`: 0 when empty;
//! - `x op ANY (a)` / `x op ALL (a)`: FALSE / TRUE over an empty array (even
//!   for a NULL `x`), otherwise three-valued over the elements;
//! - `||`, `array_cat`, `array_append`, `array_prepend`: not strict, a NULL
//!   array counts as empty and a NULL element is appended as NULL;
//! - `@>`, `<@`, `&&`: NULL elements never match;
//! - `array_position`, `array_remove`, `array_replace`: elements compared
//!   with IS NOT DISTINCT FROM, so NULL finds NULL;
//! - `array_to_string`: NULL elements skipped unless a NULL text is given.
//!
//! Operands arrive coerced by the binder (an array and its elements of one
//! type), as everywhere in `expr::func`.

use crate::repr::{Datum, EvalError};
use std::cmp::Ordering;
use std::fmt;

/// A comparison operator applied between a value and array elements
/// (`ANY`/`ALL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Comparison {
    Eq,
    NotEq,
    Lt,
    Lte,
    Gt,
    Gte,
}

impl Comparison {
    /// The comparison with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> Comparison {
        match self {
            Comparison::Lt => Comparison::Gt,
            Comparison::Lte => Comparison::Gte,
            Comparison::Gt => Comparison::Lt,
            Comparison::Gte => Comparison::Lte,
            other => other,
        }
    }

    /// Whether `l op r` holds for non-NULL operands.
    pub fn holds(self, l: &Datum, r: &Datum) -> bool {
        self.holds_for(l.sql_cmp(r))
    }

    /// Whether `l op r` holds when `l` compares with `r` as `o`.
    pub fn holds_for(self, o: Ordering) -> bool {
        match self {
            Comparison::Eq => o == Ordering::Equal,
            Comparison::NotEq => o != Ordering::Equal,
            Comparison::Lt => o == Ordering::Less,
            Comparison::Lte => o != Ordering::Greater,
            Comparison::Gt => o == Ordering::Greater,
            Comparison::Gte => o != Ordering::Less,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            Comparison::Eq => "=",
            Comparison::NotEq => "<>",
            Comparison::Lt => "<",
            Comparison::Lte => "<=",
            Comparison::Gt => ">",
            Comparison::Gte => ">=",
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.symbol())
    }
}

/// The elements of an array operand (NULL handled by the caller).
pub fn elements(d: &Datum) -> Result<&[Datum], EvalError> {
    match d {
        Datum::Array(v) => Ok(v),
        other => Err(EvalError::Internal(format!("expected an array, got {other:?}"))),
    }
}

fn into_elements(d: Datum) -> Result<Vec<Datum>, EvalError> {
    match d {
        Datum::Array(v) => Ok(v),
        Datum::Null => Ok(Vec::new()),
        other => Err(EvalError::Internal(format!("expected an array, got {other:?}"))),
    }
}

/// A subscript as Postgres reads it (an int4).
fn subscript(d: &Datum) -> Result<i64, EvalError> {
    d.as_i64().ok_or_else(|| EvalError::Internal(format!("array subscript {d:?}")))
}

/// `a[i]`.
pub fn index(a: &Datum, i: &Datum) -> Result<Datum, EvalError> {
    let v = elements(a)?;
    let i = subscript(i)?;
    Ok(i.checked_sub(1).and_then(|i| usize::try_from(i).ok()).and_then(|i| v.get(i)).cloned().unwrap_or(Datum::Null))
}

/// `a[lo:hi]` (`None` for an omitted bound): the elements within both
/// bounds and the array's.
pub fn slice(a: Datum, lo: Option<&Datum>, hi: Option<&Datum>) -> Result<Datum, EvalError> {
    let v = into_elements(a)?;
    let len = v.len() as i64;
    let lo = match lo {
        Some(d) => subscript(d)?.max(1),
        None => 1,
    };
    let hi = match hi {
        Some(d) => subscript(d)?.min(len),
        None => len,
    };
    if lo > hi {
        return Ok(Datum::Array(Vec::new()));
    }
    Ok(Datum::Array(v.into_iter().skip((lo - 1) as usize).take((hi - lo + 1) as usize).collect()))
}

/// `array_length(a, dim)`, `array_lower`, `array_upper`: NULL unless `dim`
/// is 1 and the array is not empty.
pub fn dimension(a: &Datum, dim: &Datum, f: impl Fn(usize) -> usize) -> Result<Datum, EvalError> {
    let v = elements(a)?;
    Ok(if subscript(dim)? == 1 && !v.is_empty() { Datum::Int32(f(v.len()) as i32) } else { Datum::Null })
}

/// `x op ANY (a)` (`all == false`) or `x op ALL (a)`.
pub fn any_all(op: Comparison, all: bool, x: &Datum, a: &Datum) -> Result<Datum, EvalError> {
    if a.is_null() {
        return Ok(Datum::Null);
    }
    let v = elements(a)?;
    if v.is_empty() {
        return Ok(Datum::Bool(all));
    }
    if x.is_null() {
        return Ok(Datum::Null);
    }
    let mut null = false;
    for e in v {
        if e.is_null() {
            null = true;
        } else if op.holds(x, e) != all {
            return Ok(Datum::Bool(!all));
        }
    }
    Ok(if null { Datum::Null } else { Datum::Bool(all) })
}

/// `a || b` on two arrays (`array_cat`).
pub fn cat(a: Datum, b: Datum) -> Result<Datum, EvalError> {
    if a.is_null() && b.is_null() {
        return Ok(Datum::Null);
    }
    let mut v = into_elements(a)?;
    v.extend(into_elements(b)?);
    Ok(Datum::Array(v))
}

/// `array_append(a, x)` (`a || x`).
pub fn append(a: Datum, x: Datum) -> Result<Datum, EvalError> {
    let mut v = into_elements(a)?;
    v.push(x);
    Ok(Datum::Array(v))
}

/// `array_prepend(x, a)` (`x || a`).
pub fn prepend(x: Datum, a: Datum) -> Result<Datum, EvalError> {
    let mut v = vec![x];
    v.extend(into_elements(a)?);
    Ok(Datum::Array(v))
}

/// Whether two elements are not distinct (NULL matches NULL).
fn same(a: &Datum, b: &Datum) -> bool {
    match (a, b) {
        (Datum::Null, Datum::Null) => true,
        (Datum::Null, _) | (_, Datum::Null) => false,
        (a, b) => a.sql_cmp(b) == Ordering::Equal,
    }
}

/// `array_position(a, x)`: the first position of `x`, or NULL.
pub fn position(a: &Datum, x: &Datum) -> Result<Datum, EvalError> {
    if a.is_null() {
        return Ok(Datum::Null);
    }
    let v = elements(a)?;
    Ok(v.iter().position(|e| same(e, x)).map(|p| Datum::Int32(p as i32 + 1)).unwrap_or(Datum::Null))
}

/// `array_remove(a, x)`.
pub fn remove(a: Datum, x: &Datum) -> Result<Datum, EvalError> {
    if a.is_null() {
        return Ok(Datum::Null);
    }
    Ok(Datum::Array(into_elements(a)?.into_iter().filter(|e| !same(e, x)).collect()))
}

/// `array_replace(a, from, to)`.
pub fn replace(a: Datum, from: &Datum, to: &Datum) -> Result<Datum, EvalError> {
    if a.is_null() {
        return Ok(Datum::Null);
    }
    let v = into_elements(a)?;
    Ok(Datum::Array(v.into_iter().map(|e| if same(&e, from) { to.clone() } else { e }).collect()))
}

/// `a @> b`: every element of `b` equals some element of `a` (a NULL
/// element matches nothing).
pub fn contains(a: &Datum, b: &Datum) -> Result<bool, EvalError> {
    let (a, b) = (elements(a)?, elements(b)?);
    Ok(b.iter().all(|x| !x.is_null() && a.iter().any(|y| !y.is_null() && x.sql_cmp(y) == Ordering::Equal)))
}

/// `a && b`: some non-NULL element in common.
pub fn overlaps(a: &Datum, b: &Datum) -> Result<bool, EvalError> {
    let (a, b) = (elements(a)?, elements(b)?);
    Ok(a.iter().any(|x| !x.is_null() && b.iter().any(|y| !y.is_null() && x.sql_cmp(y) == Ordering::Equal)))
}

/// `array_to_string(a, sep [, null_text])`.
pub fn to_string(a: &Datum, sep: &str, null_text: Option<&str>) -> Result<String, EvalError> {
    let mut out = String::new();
    let mut first = true;
    for e in elements(a)? {
        let text = match (e, null_text) {
            (Datum::Null, None) => continue,
            (Datum::Null, Some(n)) => n.to_string(),
            (Datum::Text(s), _) => s.clone(),
            (other, _) => other.to_string(),
        };
        if !first {
            out.push_str(sep);
        }
        first = false;
        out.push_str(&text);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ints(v: &[Option<i32>]) -> Datum {
        Datum::Array(v.iter().map(|x| x.map(Datum::Int32).unwrap_or(Datum::Null)).collect())
    }

    #[test]
    fn any_all_follow_three_valued_logic() {
        let one = Datum::Int32(1);
        let two = Datum::Int32(2);
        let with_null = ints(&[Some(1), None]);
        assert_eq!(any_all(Comparison::Eq, false, &one, &with_null), Ok(Datum::Bool(true)));
        assert_eq!(any_all(Comparison::Eq, false, &two, &with_null), Ok(Datum::Null));
        assert_eq!(any_all(Comparison::Eq, false, &Datum::Null, &ints(&[])), Ok(Datum::Bool(false)));
        assert_eq!(any_all(Comparison::Eq, true, &Datum::Null, &ints(&[])), Ok(Datum::Bool(true)));
        assert_eq!(any_all(Comparison::NotEq, true, &two, &ints(&[Some(1), Some(3)])), Ok(Datum::Bool(true)));
        assert_eq!(any_all(Comparison::NotEq, true, &two, &with_null), Ok(Datum::Null));
        assert_eq!(any_all(Comparison::NotEq, true, &one, &with_null), Ok(Datum::Bool(false)));
        assert_eq!(any_all(Comparison::Eq, false, &one, &Datum::Null), Ok(Datum::Null));
    }

    #[test]
    fn subscripts_and_slices() {
        let a = ints(&[Some(1), Some(2), Some(3)]);
        assert_eq!(index(&a, &Datum::Int32(1)), Ok(Datum::Int32(1)));
        assert_eq!(index(&a, &Datum::Int32(0)), Ok(Datum::Null));
        assert_eq!(index(&a, &Datum::Int32(4)), Ok(Datum::Null));
        let s = |lo: Option<i32>, hi: Option<i32>| {
            slice(a.clone(), lo.map(Datum::Int32).as_ref(), hi.map(Datum::Int32).as_ref()).unwrap().to_string()
        };
        assert_eq!(s(Some(2), Some(3)), "{2,3}");
        assert_eq!(s(None, Some(2)), "{1,2}");
        assert_eq!(s(Some(2), None), "{2,3}");
        assert_eq!(s(Some(5), Some(6)), "{}");
        assert_eq!(s(Some(0), Some(1)), "{1}");
    }

    #[test]
    fn concatenation_treats_null_as_empty() {
        assert_eq!(cat(Datum::Null, ints(&[Some(1)])).unwrap().to_string(), "{1}");
        assert_eq!(cat(Datum::Null, Datum::Null), Ok(Datum::Null));
        assert_eq!(append(Datum::Null, Datum::Null).unwrap().to_string(), "{NULL}");
        assert_eq!(prepend(Datum::Int32(0), ints(&[Some(1)])).unwrap().to_string(), "{0,1}");
    }

    #[test]
    fn searching_and_containment() {
        let a = ints(&[Some(1), None, Some(3)]);
        assert_eq!(position(&a, &Datum::Null), Ok(Datum::Int32(2)));
        assert_eq!(position(&a, &Datum::Int32(5)), Ok(Datum::Null));
        assert_eq!(remove(a.clone(), &Datum::Null).unwrap().to_string(), "{1,3}");
        assert_eq!(contains(&a, &ints(&[Some(3), Some(1)])), Ok(true));
        assert_eq!(contains(&a, &ints(&[None])), Ok(false));
        assert_eq!(contains(&a, &ints(&[])), Ok(true));
        assert_eq!(overlaps(&ints(&[None]), &ints(&[None])), Ok(false));
        assert_eq!(to_string(&a, ",", None).unwrap(), "1,3");
        assert_eq!(to_string(&a, ",", Some("*")).unwrap(), "1,*,3");
    }
}
