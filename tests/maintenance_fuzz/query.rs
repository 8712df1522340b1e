//! Query generation: random view queries over the schema's tables and
//! views, deterministic by construction (see the crate's header).

use super::*;

// ---------------------------------------------------------------------------
// Query generation

/// Subqueries nest this deep at most (0 is the view's own query).
pub(crate) const MAX_QD: u32 = 2;

pub(crate) struct QGen<'r> {
    pub(crate) rng: &'r mut Rng,
    pub(crate) rels: Vec<Rel>,
    pub(crate) next_alias: usize,
    /// Names of the relations the query reads.
    pub(crate) used: BTreeSet<String>,
}

pub(crate) enum Shape {
    Any,
    /// One aggregate over the whole input: always exactly one row.
    Scalar,
}

impl<'r> QGen<'r> {
    pub(crate) fn new(rng: &'r mut Rng, rels: Vec<Rel>) -> QGen<'r> {
        QGen {
            rng,
            rels,
            next_alias: 0,
            used: BTreeSet::new(),
        }
    }

    pub(crate) fn alias(&mut self) -> String {
        self.next_alias += 1;
        format!("a{}", self.next_alias - 1)
    }

    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.rng.chance(percent)
    }

    pub(crate) fn columns(items: &[Item], class: Class) -> Vec<String> {
        items
            .iter()
            .flat_map(|it| {
                it.cols
                    .iter()
                    .filter(move |(_, c)| *c == class)
                    .map(move |(n, _)| format!("{}.{}", it.alias, n))
            })
            .collect()
    }

    /// A column of `class`, now and then of an enclosing query.
    pub(crate) fn column(&mut self, ctx: Ctx, class: Class) -> Option<String> {
        let inner = Self::columns(ctx.inner, class);
        let outer = Self::columns(ctx.outer, class);
        let cands = if !outer.is_empty() && (inner.is_empty() || self.chance(25)) {
            outer
        } else {
            inner
        };
        (!cands.is_empty()).then(|| self.rng.pick(&cands).clone())
    }

    /// A class that some column in scope has, mostly.
    pub(crate) fn class_in(&mut self, items: &[Item]) -> Class {
        let all: Vec<Class> = items
            .iter()
            .flat_map(|it| it.cols.iter().map(|c| c.1))
            .collect();
        if !all.is_empty() && self.chance(90) {
            return *self.rng.pick(&all);
        }
        *self.rng.pick(&[
            Class::Num(0),
            Class::Num(0),
            Class::Num(2),
            Class::Text,
            Class::Bool,
        ])
    }

    /// A scale that some numeric column in scope has, mostly.
    pub(crate) fn num_scale(&mut self, ctx: Ctx) -> u8 {
        let scales: Vec<u8> = ctx
            .inner
            .iter()
            .chain(ctx.outer)
            .flat_map(|it| it.cols.iter())
            .filter_map(|c| match c.1 {
                Class::Num(s) => Some(s),
                _ => None,
            })
            .collect();
        if scales.is_empty() || self.chance(10) {
            *self.rng.pick(&[0, 0, 2])
        } else {
            *self.rng.pick(&scales)
        }
    }

    pub(crate) fn leaf(&mut self, ctx: Ctx, class: Class) -> String {
        if !self.chance(15)
            && let Some(c) = self.column(ctx, class)
        {
            return c;
        }
        if self.chance(5) {
            return class.null();
        }
        literal(self.rng, class)
    }

    pub(crate) fn expr(&mut self, ctx: Ctx, class: Class, d: u32) -> String {
        match class {
            Class::Num(s) => self.num(ctx, s, d),
            Class::Text => self.text(ctx, d),
            Class::Bool => self.pred(ctx, d),
        }
    }

    /// An expression that reads a column (for GROUP BY, PARTITION BY and
    /// ORDER BY, where a constant means something else).
    pub(crate) fn keyed(&mut self, ctx: Ctx, class: Class, d: u32) -> (String, Class) {
        for _ in 0..4 {
            let e = self.expr(ctx, class, d);
            if e.contains('.') && !bare_constant(&e) {
                return (e, class);
            }
        }
        if let Some(c) = self.column(ctx, class) {
            return (c, class);
        }
        let it = &ctx.inner[self.rng.below(ctx.inner.len())];
        let (name, class) = self.rng.pick(&it.cols).clone();
        (format!("{}.{name}", it.alias), class)
    }

    pub(crate) fn num(&mut self, ctx: Ctx, s: u8, d: u32) -> String {
        if d == 0 || self.chance(40) {
            return self.leaf(ctx, Class::Num(s));
        }
        let d = d - 1;
        let lower = if s == 0 { 0 } else { *self.rng.pick(&[0, s]) };
        match self.rng.below(13) {
            0..=2 => {
                let a = self.num(ctx, s, d);
                let b = self.num(ctx, lower, d);
                let op = if self.chance(35) { "-" } else { "+" };
                // Of different scales too: `1 + 0.00` is 1.00 (the
                // larger scale), which ripple once printed as `1`.
                if self.chance(50) { format!("({a} {op} {b})") } else { format!("({b} {op} {a})") }
            }
            3 => {
                let (x, y) = match s {
                    0 => (0, 0),
                    2 => (0, 2),
                    _ if self.chance(50) => (2, 2),
                    _ => (0, 4),
                };
                let a = self.num(ctx, x, d);
                let b = self.num(ctx, y, d);
                format!("({a} * {b})")
            }
            4 => {
                let p = self.pred(ctx, d);
                let a = self.num(ctx, s, d);
                if self.chance(30) {
                    format!("CASE WHEN {p} THEN {a} END")
                } else {
                    let b = self.num(ctx, s, d);
                    format!("CASE WHEN {p} THEN {a} ELSE {b} END")
                }
            }
            5 => {
                let a = self.num(ctx, s, d);
                let b = self.num(ctx, s, d);
                format!("COALESCE({a}, {b})")
            }
            6 => {
                let a = self.num(ctx, s, d);
                // `- x` of a numeric zero is zero (ripple once made a
                // negative zero, `-0.00`, a second value).
                if self.chance(50) { format!("abs({a})") } else { format!("(- {a})") }
            }
            7 if s == 0 => format!("({} % 3)", self.num(ctx, 0, d)),
            7 | 8 if s > 0 => {
                let from = if s == 4 { *self.rng.pick(&[0, 2]) } else { 0 };
                format!("CAST({} AS numeric(12,{s}))", self.num(ctx, from, d))
            }
            8 => format!("length({})", self.text(ctx, d)),
            9 if s == 0 => format!("CASE WHEN {} THEN 1 ELSE 0 END", self.pred(ctx, d)),
            9 | 10 => {
                let f = if self.chance(50) { "GREATEST" } else { "LEAST" };
                let a = self.num(ctx, s, d);
                let b = self.num(ctx, s, d);
                format!("{f}({a}, {b})")
            }
            11 => {
                let a = self.num(ctx, s, d);
                format!("NULLIF({a}, {})", literal(self.rng, Class::Num(s)))
            }
            _ if ctx.sub && ctx.qd < MAX_QD => self.scalar_subquery(ctx, Class::Num(s)),
            _ => self.leaf(ctx, Class::Num(s)),
        }
    }

    pub(crate) fn text(&mut self, ctx: Ctx, d: u32) -> String {
        if d == 0 || self.chance(45) {
            return self.leaf(ctx, Class::Text);
        }
        let d = d - 1;
        match self.rng.below(10) {
            0 => {
                let a = self.text(ctx, d);
                let b = self.text(ctx, d);
                format!("({a} || {b})")
            }
            1 => format!("upper({})", self.text(ctx, d)),
            2 => format!("lower({})", self.text(ctx, d)),
            3 => format!("substr({}, 2)", self.text(ctx, d)),
            4 => {
                let p = self.pred(ctx, d);
                let a = self.text(ctx, d);
                let b = self.text(ctx, d);
                format!("CASE WHEN {p} THEN {a} ELSE {b} END")
            }
            5 => {
                let a = self.text(ctx, d);
                let b = self.text(ctx, d);
                format!("COALESCE({a}, {b})")
            }
            6 => {
                let s = *self.rng.pick(&[0, 0, 2]);
                format!("CAST({} AS text)", self.num(ctx, s, d))
            }
            7 => format!("replace({}, 'a', 'x')", self.text(ctx, d)),
            8 if ctx.sub && ctx.qd < MAX_QD => self.scalar_subquery(ctx, Class::Text),
            _ => self.leaf(ctx, Class::Text),
        }
    }

    /// A boolean expression, parenthesized.
    pub(crate) fn pred(&mut self, ctx: Ctx, d: u32) -> String {
        if d > 0 && self.chance(35) {
            let d = d - 1;
            let a = self.pred(ctx, d);
            return match self.rng.below(6) {
                0 | 1 => format!("({a} AND {})", self.pred(ctx, d)),
                2 | 3 => format!("({a} OR {})", self.pred(ctx, d)),
                4 => format!("(NOT {a})"),
                _ => format!("({a} IS {}TRUE)", if self.chance(50) { "NOT " } else { "" }),
            };
        }
        if ctx.sub && ctx.qd < MAX_QD && self.chance(12) {
            return self.sub_pred(ctx);
        }
        let e = d.min(1);
        let not = if self.chance(25) { "NOT " } else { "" };
        // Mostly a test of one column (of this query, now and then of an
        // enclosing one), sometimes of an expression.
        let mut cols: Vec<(String, Class)> = Vec::new();
        let outer = !ctx.outer.is_empty() && self.chance(20);
        for it in if outer { ctx.outer } else { ctx.inner } {
            cols.extend(
                it.cols
                    .iter()
                    .map(|(n, c)| (format!("{}.{n}", it.alias), *c)),
            );
        }
        let (x, class) = if !cols.is_empty() && self.chance(75) {
            self.rng.pick(&cols).clone()
        } else {
            let class = self.class_in(ctx.inner);
            (self.expr(ctx.no_sub(), class, 1), class)
        };
        match class {
            Class::Num(s) => match self.rng.below(10) {
                0..=3 => {
                    let ls = if self.chance(70) { 0 } else { s };
                    let lit = literal(self.rng, Class::Num(ls));
                    format!("({x} {} {lit})", self.rng.pick(CMP))
                }
                4 | 5 => {
                    let s2 = self.num_scale(ctx);
                    let y = self.num(ctx, s2, e);
                    format!("({x} {} {y})", self.rng.pick(CMP))
                }
                6 => {
                    let mut list: Vec<String> = (0..1 + self.rng.below(4))
                        .map(|_| literal(self.rng, Class::Num(s)))
                        .collect();
                    if self.chance(15) {
                        list.push("NULL".into());
                    }
                    format!("({x} {not}IN ({}))", list.join(", "))
                }
                7 => {
                    let lo = self.rng.range(-5, 3);
                    let hi = lo + self.rng.range(0, 4);
                    format!("({x} {not}BETWEEN {lo} AND {hi})")
                }
                8 => format!("({x} IS {not}NULL)"),
                _ => {
                    let s2 = self.num_scale(ctx);
                    let y = self.num(ctx, s2, e);
                    format!("({x} IS {not}DISTINCT FROM {y})")
                }
            },
            Class::Text => match self.rng.below(9) {
                0 | 1 => format!(
                    "({x} {} {})",
                    self.rng.pick(CMP),
                    literal(self.rng, Class::Text)
                ),
                2 => {
                    let y = self.text(ctx, e);
                    format!("({x} {} {y})", self.rng.pick(CMP))
                }
                3 | 4 => format!("({x} {not}LIKE '{}')", self.rng.pick(LIKE_PATTERNS)),
                5 => {
                    let mut list: Vec<String> = (0..1 + self.rng.below(4))
                        .map(|_| literal(self.rng, Class::Text))
                        .collect();
                    if self.chance(15) {
                        list.push("NULL".into());
                    }
                    format!("({x} {not}IN ({}))", list.join(", "))
                }
                6 => format!("({x} IS {not}NULL)"),
                _ => {
                    let y = self.text(ctx, e);
                    format!("({x} IS {not}DISTINCT FROM {y})")
                }
            },
            Class::Bool => match self.rng.below(5) {
                0..=2 => format!("({not}{x})"),
                3 => format!("({x} IS {not}NULL)"),
                _ => format!("({x} = {})", self.pred(ctx.no_sub(), 0)),
            },
        }
    }

    /// EXISTS, IN, a comparison with a scalar subquery, ANY/ALL.
    pub(crate) fn sub_pred(&mut self, ctx: Ctx) -> String {
        let outer: Vec<Item> = ctx.inner.iter().chain(ctx.outer).cloned().collect();
        let not = if self.chance(30) { "NOT " } else { "" };
        match self.rng.below(6) {
            0 | 1 if self.chance(70) => {
                let (from, items) = self.gen_from(ctx.qd + 1);
                let inner = Ctx {
                    inner: &items,
                    outer: &outer,
                    qd: ctx.qd + 1,
                    sub: ctx.qd + 1 < MAX_QD,
                };
                let mut conds: Vec<String> = self.correlation(&items, &outer).into_iter().collect();
                if conds.is_empty() || self.chance(50) {
                    conds.push(self.pred(inner, 1));
                }
                format!(
                    "({not}EXISTS (SELECT 1 FROM {from} WHERE {}))",
                    conds.join(" AND ")
                )
            }
            0 | 1 => {
                let q = self.query(&outer, None, ctx.qd + 1);
                format!("({not}EXISTS ({}))", q.sql)
            }
            2 | 3 => {
                let class = self.class_in(ctx.inner);
                let class = if let Class::Num(_) = class {
                    Class::Num(self.num_scale(ctx))
                } else {
                    class
                };
                let x = match self.column(ctx, class) {
                    Some(c) if self.chance(60) => c,
                    _ => self.expr(ctx.no_sub(), class, 1),
                };
                let q = self.query(&outer, Some(&[class]), ctx.qd + 1);
                format!("({x} {not}IN ({}))", q.sql)
            }
            4 => {
                let s = self.num_scale(ctx);
                let x = self.num(ctx.no_sub(), s, 1);
                let q = self.scalar_subquery(ctx, Class::Num(s));
                format!("({x} {} {q})", self.rng.pick(CMP))
            }
            _ => {
                let s = self.num_scale(ctx);
                let x = self.num(ctx.no_sub(), s, 1);
                let q = self.query(&outer, Some(&[Class::Num(s)]), ctx.qd + 1);
                let quant = if self.chance(50) { "ANY" } else { "ALL" };
                format!("({x} {} {quant} ({}))", self.rng.pick(CMP), q.sql)
            }
        }
    }

    /// `(SELECT agg FROM ...)`: exactly one row, so never an error.
    pub(crate) fn scalar_subquery(&mut self, ctx: Ctx, class: Class) -> String {
        let outer: Vec<Item> = ctx.inner.iter().chain(ctx.outer).cloned().collect();
        let q = self.select_core(&outer, Some(&[class]), Shape::Scalar, ctx.qd + 1, true);
        format!("({})", q.sql)
    }

    pub(crate) fn aggregate(&mut self, ctx: Ctx, class: Class) -> String {
        let ctx = ctx.no_sub();
        let e = self.rng.below(2) as u32;
        match class {
            Class::Num(0) => match self.rng.below(9) {
                0 | 1 => "count(*)".into(),
                2 => {
                    let c = self.class_in(ctx.inner);
                    format!("count({})", self.expr(ctx, c, e))
                }
                3 => {
                    let c = self.class_in(ctx.inner);
                    format!("count(DISTINCT {})", self.expr(ctx, c, e))
                }
                4 | 5 => format!("sum({})", self.num(ctx, 0, e)),
                6 => format!(
                    "{}({})",
                    self.rng.pick(&["min", "max"]),
                    self.num(ctx, 0, e)
                ),
                7 => format!("COALESCE(sum({}), 0)", self.num(ctx, 0, e)),
                _ => format!("count(*) FILTER (WHERE {})", self.pred(ctx, 1)),
            },
            Class::Num(4) => match self.rng.below(3) {
                0 => {
                    let s = self.num_scale(ctx);
                    format!("round(avg({}), 4)", self.num(ctx, s, e))
                }
                1 => {
                    let s = self.num_scale(ctx);
                    format!("CAST(avg({}) AS numeric(20,4))", self.num(ctx, s, e))
                }
                _ => format!("sum({})", self.num(ctx, 4, e)),
            },
            Class::Num(s) => match self.rng.below(5) {
                0 | 1 => format!("sum({})", self.num(ctx, s, e)),
                2 => format!(
                    "{}({})",
                    self.rng.pick(&["min", "max"]),
                    self.num(ctx, s, e)
                ),
                3 => format!("sum(DISTINCT {})", self.num(ctx, s, e)),
                _ => format!(
                    "sum({}) FILTER (WHERE {})",
                    self.num(ctx, s, e),
                    self.pred(ctx, 1)
                ),
            },
            Class::Text => match self.rng.below(4) {
                0 => format!("{}({})", self.rng.pick(&["min", "max"]), self.text(ctx, e)),
                1 | 2 => {
                    let t = self.text(ctx, e);
                    let desc = if self.chance(30) { " DESC" } else { "" };
                    format!("string_agg({t}, ',' ORDER BY {t}{desc})")
                }
                _ => {
                    let t = self.text(ctx, e);
                    format!("string_agg(DISTINCT {t}, '|' ORDER BY {t})")
                }
            },
            Class::Bool => match self.rng.below(4) {
                0 => format!("bool_and({})", self.pred(ctx, 1)),
                1 => format!("bool_or({})", self.pred(ctx, 1)),
                2 => format!("(count(*) > {})", self.rng.range(0, 3)),
                _ => format!("(sum({}) IS NULL)", self.num(ctx, 0, e)),
            },
        }
    }

    pub(crate) fn having(&mut self, ctx: Ctx) -> String {
        let mut h = match self.rng.below(4) {
            0 => format!("(count(*) > {})", self.rng.range(0, 2)),
            1 => {
                let s = self.num_scale(ctx);
                let a = self.aggregate(ctx, Class::Num(s));
                format!(
                    "({a} {} {})",
                    self.rng.pick(CMP),
                    literal(self.rng, Class::Num(s))
                )
            }
            2 => {
                let a = self.aggregate(ctx, Class::Text);
                format!("({a} LIKE '{}')", self.rng.pick(LIKE_PATTERNS))
            }
            _ => self.aggregate(ctx, Class::Bool),
        };
        if self.chance(25) {
            let more = self.having(ctx);
            h = format!(
                "({h} {} {more})",
                if self.chance(50) { "AND" } else { "OR" }
            );
        }
        h
    }

    pub(crate) fn table_ref(&mut self, qd: u32) -> (String, Item) {
        let alias = self.alias();
        if qd < MAX_QD && self.chance(10) {
            let q = self.query(&[], None, qd + 1);
            let cols = q
                .cols
                .iter()
                .enumerate()
                .map(|(i, c)| (format!("c{i}"), *c))
                .collect();
            return (format!("({}) AS {alias}", q.sql), Item { alias, cols });
        }
        // Tables twice as likely as views.
        let weighted: Vec<usize> = (0..self.rels.len())
            .flat_map(|i| std::iter::repeat_n(i, if self.rels[i].is_table { 2 } else { 1 }))
            .collect();
        let rel = self.rels[*self.rng.pick(&weighted)].clone();
        self.used.insert(rel.name.clone());
        (
            format!("{} AS {alias}", rel.name),
            Item {
                alias,
                cols: rel.cols,
            },
        )
    }

    /// An equality between a column on the left and one of `right`, and
    /// sometimes more: another equality, a predicate over both sides.
    pub(crate) fn join_condition(&mut self, left: &[Item], right: &Item) -> String {
        // (left column, right column) pairs of comparable classes.
        let mut pairs = Vec::new();
        let mut bool_pairs = Vec::new();
        for l in left {
            for (ln, lc) in &l.cols {
                for (rn, rc) in &right.cols {
                    if lc.compatible(*rc) {
                        let pair = (format!("{}.{ln}", l.alias), format!("{}.{rn}", right.alias));
                        if *lc == Class::Bool {
                            bool_pairs.push(pair)
                        } else {
                            pairs.push(pair)
                        }
                    }
                }
            }
        }
        if pairs.is_empty() || self.chance(10) {
            pairs.extend(bool_pairs);
        }
        let mut conds = Vec::new();
        if !pairs.is_empty() && !self.chance(8) {
            let (l, r) = self.rng.pick(&pairs).clone();
            conds.push(format!("{l} = {r}"));
            if self.chance(20) {
                // A second equality, which may share a column with the
                // first (`a.x = b.y AND a.x = b.z`: ripple once lost `b.y =
                // b.z` where `a` was read from an index on `x`).
                let more: Vec<&(String, String)> = pairs.iter().collect();
                if !more.is_empty() {
                    let (l2, r2) = more[self.rng.below(more.len())];
                    conds.push(format!("{l2} = {r2}"));
                }
            }
        }
        if conds.is_empty() || self.chance(30) {
            let all: Vec<Item> = left.iter().cloned().chain([right.clone()]).collect();
            conds.push(self.pred(Ctx::plain(&all), 1));
        }
        conds.join(" AND ")
    }

    pub(crate) fn gen_from(&mut self, qd: u32) -> (String, Vec<Item>) {
        let n = match self.rng.below(10) {
            0..=4 => 1,
            5..=8 => 2,
            _ if qd == 0 => 3,
            _ => 2,
        };
        let (mut sql, first) = self.table_ref(qd);
        let mut items = vec![first];
        for _ in 1..n {
            let (s, it) = self.table_ref(qd);
            let kind = *self.rng.pick(&[
                "JOIN",
                "JOIN",
                "JOIN",
                "LEFT JOIN",
                "LEFT JOIN",
                "RIGHT JOIN",
                "FULL JOIN",
                "CROSS JOIN",
            ]);
            if kind == "CROSS JOIN" && n == 2 {
                write!(sql, " CROSS JOIN {s}").unwrap();
            } else {
                let kind = if kind == "CROSS JOIN" { "JOIN" } else { kind };
                let on = self.join_condition(&items, &it);
                write!(sql, " {kind} {s} ON {on}").unwrap();
            }
            items.push(it);
        }
        (sql, items)
    }

    /// `inner = outer` for some pair of columns: the usual correlation.
    pub(crate) fn correlation(&mut self, inner: &[Item], outer: &[Item]) -> Option<String> {
        let mut pairs = Vec::new();
        for i in inner {
            for (iname, ic) in &i.cols {
                for o in outer {
                    for (oname, oc) in &o.cols {
                        if ic.compatible(*oc) {
                            pairs.push((
                                format!("{}.{iname}", i.alias),
                                format!("{}.{oname}", o.alias),
                            ));
                        }
                    }
                }
            }
        }
        if pairs.is_empty() {
            return None;
        }
        let (i, o) = self.rng.pick(&pairs).clone();
        let op = if self.chance(85) {
            "="
        } else {
            *self.rng.pick(CMP)
        };
        Some(format!("({i} {op} {o})"))
    }

    /// One SELECT (no set operation): FROM, WHERE, then a projection, an
    /// aggregation or a projection with window functions.
    pub(crate) fn select_core(
        &mut self,
        outer: &[Item],
        target: Option<&[Class]>,
        shape: Shape,
        qd: u32,
        setop_side: bool,
    ) -> Q {
        let (from, items) = self.gen_from(qd);
        let ctx = Ctx {
            inner: &items,
            outer,
            qd,
            sub: qd < MAX_QD,
        };
        let mut conds = Vec::new();
        if !outer.is_empty()
            && self.chance(60)
            && let Some(c) = self.correlation(&items, outer)
        {
            conds.push(c);
        }
        if self.chance(55) {
            let d = 1 + u32::from(self.chance(30));
            conds.push(self.pred(ctx, d));
        }
        let wh = if conds.is_empty() {
            String::new()
        } else {
            format!(" WHERE {}", conds.join(" AND "))
        };
        let agg_ctx = Ctx {
            inner: &items,
            outer: &[],
            qd,
            sub: false,
        };
        if let Shape::Scalar = shape {
            let class = target.expect("a scalar subquery has a target")[0];
            let a = self.aggregate(agg_ctx, class);
            return Q {
                sql: format!("SELECT {a} AS c0 FROM {from}{wh}"),
                cols: vec![class],
                ordered: false,
            };
        }
        let mode = self.rng.below(100);
        if mode < 38 {
            // Aggregation.
            let ngroups = self.rng.below(3);
            let keys: Vec<(String, Class)> = (0..ngroups)
                .map(|_| {
                    let class = self.class_in(&items);
                    let class = if let Class::Num(_) = class {
                        Class::Num(self.num_scale(agg_ctx))
                    } else {
                        class
                    };
                    let d = self.rng.below(2) as u32;
                    self.keyed(agg_ctx, class, d)
                })
                .collect();
            let mut outs: Vec<(String, Class)> = Vec::new();
            match target {
                Some(t) => {
                    for &class in t {
                        let key = keys.iter().find(|k| k.1 == class).cloned();
                        match key {
                            Some(k) if self.chance(50) => outs.push(k),
                            _ => outs.push((self.aggregate(agg_ctx, class), class)),
                        }
                    }
                }
                None => {
                    for k in &keys {
                        if self.chance(85) {
                            outs.push(k.clone());
                        }
                    }
                    for _ in 0..1 + self.rng.below(3) {
                        let class = match self.rng.below(8) {
                            0..=2 => Class::Num(0),
                            3 => Class::Num(self.num_scale(agg_ctx)),
                            4 => Class::Num(4),
                            5 | 6 => Class::Text,
                            _ => Class::Bool,
                        };
                        outs.push((self.aggregate(agg_ctx, class), class));
                    }
                }
            }
            let list: Vec<String> = outs
                .iter()
                .enumerate()
                .map(|(i, (e, _))| format!("{e} AS c{i}"))
                .collect();
            let mut sql = format!("SELECT {} FROM {from}{wh}", list.join(", "));
            if !keys.is_empty() {
                let ks: Vec<&str> = keys.iter().map(|k| k.0.as_str()).collect();
                write!(sql, " GROUP BY {}", ks.join(", ")).unwrap();
            }
            if self.chance(25) {
                write!(sql, " HAVING {}", self.having(agg_ctx)).unwrap();
            }
            return Q {
                sql,
                cols: outs.iter().map(|o| o.1).collect(),
                ordered: false,
            };
        }
        let classes: Vec<Class> = match target {
            Some(t) => t.to_vec(),
            None => (0..1 + self.rng.below(4))
                .map(|_| self.class_in(&items))
                .collect(),
        };
        let window = target.is_none() && mode >= 80;
        // Subqueries in the select list of a query with window functions
        // too (ripple once failed them with XX000 "column 1099511627777 out
        // of range").
        let pctx = ctx;
        let exprs: Vec<String> = classes
            .iter()
            .map(|&c| match self.column(ctx.no_sub(), c) {
                Some(col) if self.chance(50) => col,
                _ => {
                    let d = 1 + self.rng.below(2) as u32;
                    self.expr(pctx, c, d)
                }
            })
            .collect();
        let mut list: Vec<String> = exprs
            .iter()
            .enumerate()
            .map(|(i, e)| format!("{e} AS c{i}"))
            .collect();
        let mut cols = classes.clone();
        if window {
            // Window functions. The order-sensitive ones (row_number, lag:
            // at most one per query) order by every other output column, so
            // that rows they cannot tell apart are the same rows; with two
            // window functions both partition and order by output columns
            // only, so that the order-sensitive one cannot pair rows with
            // different values of the other.
            let keys: Vec<usize> = (0..exprs.len())
                .filter(|&i| !bare_constant(&exprs[i]))
                .collect();
            let order_all: Vec<&str> = keys.iter().map(|&i| exprs[i].as_str()).collect();
            let order_all = if order_all.is_empty() {
                String::new()
            } else {
                format!("ORDER BY {}", order_all.join(", "))
            };
            let n = 1 + self.rng.below(2);
            let mut sensitive = false;
            for _ in 0..n {
                let part = if !self.chance(60) || (n > 1 && keys.is_empty()) {
                    String::new()
                } else if n == 1 {
                    let class = self.class_in(&items);
                    format!("PARTITION BY {} ", self.keyed(agg_ctx, class, 0).0)
                } else {
                    format!("PARTITION BY {} ", exprs[*self.rng.pick(&keys)])
                };
                let ej = if keys.is_empty() {
                    None
                } else {
                    Some(*self.rng.pick(&keys))
                };
                let desc = if self.chance(40) { " DESC" } else { "" };
                let (w, class) = match (self.rng.below(8), ej) {
                    (0 | 1, _) if !sensitive => {
                        sensitive = true;
                        (
                            format!("row_number() OVER ({part}{order_all})"),
                            Class::Num(0),
                        )
                    }
                    (2, Some(j)) if !sensitive => {
                        sensitive = true;
                        (
                            format!("lag({}) OVER ({part}{order_all})", exprs[j]),
                            classes[j],
                        )
                    }
                    (0..=2, Some(j)) => (
                        format!("rank() OVER ({part}ORDER BY {}{desc})", exprs[j]),
                        Class::Num(0),
                    ),
                    (3, Some(j)) => (
                        format!("dense_rank() OVER ({part}ORDER BY {}{desc})", exprs[j]),
                        Class::Num(0),
                    ),
                    (4, _) => {
                        let s = self.num_scale(agg_ctx);
                        (
                            format!("sum({}) OVER ({part})", self.num(agg_ctx, s, 1)),
                            Class::Num(s),
                        )
                    }
                    (6, Some(j)) => {
                        let s = self.num_scale(agg_ctx);
                        let x = self.num(agg_ctx, s, 1);
                        (
                            format!("sum({x}) OVER ({part}ORDER BY {}{desc})", exprs[j]),
                            Class::Num(s),
                        )
                    }
                    (7, _) => {
                        let class = self.class_in(&items);
                        let f = if self.chance(50) { "min" } else { "max" };
                        let x = match class {
                            Class::Bool => self.text(agg_ctx, 0),
                            _ => self.expr(agg_ctx, class, 1),
                        };
                        let class = if class == Class::Bool {
                            Class::Text
                        } else {
                            class
                        };
                        (format!("{f}({x}) OVER ({part})"), class)
                    }
                    _ => (format!("count(*) OVER ({part})"), Class::Num(0)),
                };
                list.push(format!("{w} AS c{}", list.len()));
                cols.push(class);
            }
        }
        if !setop_side && target.is_none() && self.chance(6) {
            let order: Vec<String> = (1..=cols.len())
                .map(|i| format!("{i}{}", self.direction()))
                .collect();
            let sql = format!(
                "SELECT DISTINCT ON (1) {} FROM {from}{wh} ORDER BY {}",
                list.join(", "),
                order.join(", ")
            );
            return Q {
                sql,
                cols,
                ordered: true,
            };
        }
        let distinct = if self.chance(15) { "DISTINCT " } else { "" };
        Q {
            sql: format!("SELECT {distinct}{} FROM {from}{wh}", list.join(", ")),
            cols,
            ordered: false,
        }
    }

    pub(crate) fn direction(&mut self) -> &'static str {
        DIRECTIONS[self.rng.below(DIRECTIONS.len())]
    }

    /// A query: a SELECT or a set operation of SELECTs, sometimes ordered
    /// by every column and limited.
    pub(crate) fn query(&mut self, outer: &[Item], target: Option<&[Class]>, qd: u32) -> Q {
        let mut q = if qd < MAX_QD && self.chance(12) {
            let l = self.select_core(outer, target, Shape::Any, qd, true);
            let mut sql = l.sql;
            for _ in 0..1 + usize::from(self.chance(20)) {
                let r = self.select_core(outer, Some(&l.cols), Shape::Any, qd, true);
                let op = self.rng.pick(&[
                    "UNION",
                    "UNION ALL",
                    "EXCEPT",
                    "EXCEPT ALL",
                    "INTERSECT",
                    "INTERSECT ALL",
                ]);
                write!(sql, " {op} {}", r.sql).unwrap();
            }
            Q {
                sql,
                cols: l.cols,
                ordered: false,
            }
        } else {
            self.select_core(outer, target, Shape::Any, qd, false)
        };
        if !q.ordered && self.chance(12) {
            let order: Vec<String> = (1..=q.cols.len())
                .map(|i| format!("{i}{}", self.direction()))
                .collect();
            write!(q.sql, " ORDER BY {}", order.join(", ")).unwrap();
            q.ordered = true;
            if self.chance(15) {
                write!(q.sql, " OFFSET {}", self.rng.range(1, 3)).unwrap();
                return q;
            }
        }
        if q.ordered && self.chance(85) {
            write!(q.sql, " LIMIT {}", self.rng.range(0, 5)).unwrap();
            if self.chance(30) {
                write!(q.sql, " OFFSET {}", self.rng.range(0, 3)).unwrap();
            }
        }
        q
    }
}
