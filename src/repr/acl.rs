//! Privileges as PostgreSQL keeps them: an object's access control list
//! (ACL) of items `grantee=privileges/grantor`, with `*` after a privilege
//! held WITH GRANT OPTION, and the rules of `GRANT` and `REVOKE` on it.
//!
//! An object with no ACL stored has its kind's default: its owner holds
//! every privilege (a database also gives `PUBLIC` CONNECT and TEMPORARY).
//! The text form and the letters are PostgreSQL's (`aclitem`), so
//! `relacl`, `nspacl` and psql's `\dp` read as they would there.
//!
//! Owns: the privilege bits, ACL items, their text form, and what holding,
//! granting and revoking mean on one ACL. Must not: know the catalog,
//! roles' names or sessions (callers pass OIDs and a name lookup).

use serde::{Deserialize, Serialize};

use super::Error;

/// The grantee that stands for every role.
pub const PUBLIC: i64 = 0;

/// A set of privileges (PostgreSQL's `AclMode` bits, in its order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Privs(pub u16);

impl Privs {
    pub const NONE: Privs = Privs(0);
    pub const INSERT: Privs = Privs(1 << 0);
    pub const SELECT: Privs = Privs(1 << 1);
    pub const UPDATE: Privs = Privs(1 << 2);
    pub const DELETE: Privs = Privs(1 << 3);
    pub const TRUNCATE: Privs = Privs(1 << 4);
    pub const REFERENCES: Privs = Privs(1 << 5);
    pub const TRIGGER: Privs = Privs(1 << 6);
    pub const USAGE: Privs = Privs(1 << 8);
    pub const CREATE: Privs = Privs(1 << 9);
    pub const TEMPORARY: Privs = Privs(1 << 10);
    pub const CONNECT: Privs = Privs(1 << 11);

    pub fn union(self, other: Privs) -> Privs {
        Privs(self.0 | other.0)
    }
    pub fn intersect(self, other: Privs) -> Privs {
        Privs(self.0 & other.0)
    }
    pub fn minus(self, other: Privs) -> Privs {
        Privs(self.0 & !other.0)
    }
    pub fn contains(self, other: Privs) -> bool {
        self.0 & other.0 == other.0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The privilege a keyword names (`SELECT`, `temp`...), any case.
    pub fn named(name: &str) -> Option<Privs> {
        let upper = name.trim().to_ascii_uppercase();
        let upper = match upper.as_str() {
            "TEMP" => "TEMPORARY",
            other => other,
        };
        NAMES.iter().find(|(_, _, n)| *n == upper).map(|(_, p, _)| *p)
    }

    /// The keywords of the privileges in the set, in PostgreSQL's order.
    pub fn names(self) -> Vec<&'static str> {
        self.each().map(|(n, _)| n).collect()
    }

    /// Each privilege in the set with its keyword, in PostgreSQL's order.
    pub fn each(self) -> impl Iterator<Item = (&'static str, Privs)> {
        NAMES.iter().filter(move |(_, p, _)| self.contains(*p)).map(|(_, p, n)| (*n, *p))
    }
}

/// Letter, privilege, keyword: PostgreSQL's `ACL_ALL_RIGHTS_STR` order.
const NAMES: [(char, Privs, &str); 11] = [
    ('a', Privs::INSERT, "INSERT"),
    ('r', Privs::SELECT, "SELECT"),
    ('w', Privs::UPDATE, "UPDATE"),
    ('d', Privs::DELETE, "DELETE"),
    ('D', Privs::TRUNCATE, "TRUNCATE"),
    ('x', Privs::REFERENCES, "REFERENCES"),
    ('t', Privs::TRIGGER, "TRIGGER"),
    ('U', Privs::USAGE, "USAGE"),
    ('C', Privs::CREATE, "CREATE"),
    ('T', Privs::TEMPORARY, "TEMPORARY"),
    ('c', Privs::CONNECT, "CONNECT"),
];

/// What kind of object an ACL belongs to: it decides which privileges
/// apply and what the default ACL is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ObjectKind {
    Table,
    View,
    MaterializedView,
    Schema,
    Database,
}

impl ObjectKind {
    /// Every privilege that applies to the kind (`ALL PRIVILEGES`).
    pub fn all(self) -> Privs {
        match self {
            ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView => Privs(0b111_1111),
            ObjectKind::Schema => Privs::USAGE.union(Privs::CREATE),
            ObjectKind::Database => Privs::CREATE.union(Privs::TEMPORARY).union(Privs::CONNECT),
        }
    }

    /// The word PostgreSQL's messages use for the kind.
    pub fn noun(self) -> &'static str {
        match self {
            ObjectKind::Table => "table",
            ObjectKind::View => "view",
            ObjectKind::MaterializedView => "materialized view",
            ObjectKind::Schema => "schema",
            ObjectKind::Database => "database",
        }
    }

    /// The noun `GRANT` uses in its "invalid privilege type" message.
    fn grant_noun(self) -> &'static str {
        match self {
            ObjectKind::Table | ObjectKind::View | ObjectKind::MaterializedView => "relation",
            other => other.noun(),
        }
    }

    /// `privs` if they all apply to the kind; 0LP01 naming the first that
    /// does not.
    pub fn check_applies(self, privs: Privs) -> Result<(), Error> {
        match privs.minus(self.all()).names().first() {
            Some(name) => Err(Error::InvalidGrantOperation(format!("invalid privilege type {name} for {}", self.grant_noun()))),
            None => Ok(()),
        }
    }
}

/// One ACL entry: `grantee` holds `privs` (`options`: those of them it may
/// grant on) as granted by `grantor`. Roles are OIDs; `PUBLIC` is 0.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclItem {
    pub grantee: i64,
    pub grantor: i64,
    pub privs: Privs,
    /// (Always written: plans carry ACLs to the workers in a binary format
    /// that cannot skip a field; records stored without it read as none.)
    #[serde(default)]
    pub options: Privs,
}

impl AclItem {
    /// `grantee=privs/grantor` with `*` after a grantable privilege;
    /// `PUBLIC` is an empty grantee; an unknown role shows as its OID.
    pub fn text(&self, name_of: &dyn Fn(i64) -> Option<String>) -> String {
        let role = |oid: i64| if oid == PUBLIC { String::new() } else { quote_role(&name_of(oid).unwrap_or_else(|| oid.to_string())) };
        let mut out = role(self.grantee);
        out.push('=');
        for (letter, p, _) in NAMES {
            if self.privs.contains(p) {
                out.push(letter);
                if self.options.contains(p) {
                    out.push('*');
                }
            }
        }
        out.push('/');
        out.push_str(&role(self.grantor));
        out
    }
}

/// A role name as `aclitem` prints it: double-quoted when it holds
/// anything but letters, digits and underscores.
fn quote_role(name: &str) -> String {
    if name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// An object's ACL as stored (its items in the order granted).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Acl(pub Vec<AclItem>);

impl Acl {
    /// The ACL an object of `kind` owned by `owner` has when none is
    /// stored.
    pub fn default_for(kind: ObjectKind, owner: i64) -> Acl {
        let mut items = vec![AclItem { grantee: owner, grantor: owner, privs: kind.all(), options: Privs::NONE }];
        if kind == ObjectKind::Database {
            items.insert(0, AclItem { grantee: PUBLIC, grantor: owner, privs: Privs::TEMPORARY.union(Privs::CONNECT), options: Privs::NONE });
        }
        Acl(items)
    }

    /// What `role` holds directly or through `PUBLIC`, and of that, what
    /// it may grant.
    pub fn held(&self, role: i64) -> (Privs, Privs) {
        self.0.iter().filter(|i| i.grantee == role || i.grantee == PUBLIC).fold((Privs::NONE, Privs::NONE), |(p, o), i| {
            (p.union(i.privs), o.union(i.options))
        })
    }

    /// Whether `role` holds every privilege of `privs`.
    pub fn allows(&self, role: i64, privs: Privs) -> bool {
        self.held(role).0.contains(privs)
    }

    /// The ACL as text items (`aclitem[]`'s elements).
    pub fn texts(&self, name_of: &dyn Fn(i64) -> Option<String>) -> Vec<String> {
        self.0.iter().map(|i| i.text(name_of)).collect()
    }

    /// Whether `role` appears in it, as grantee or grantor.
    pub fn mentions(&self, role: i64) -> bool {
        self.0.iter().any(|i| i.grantee == role || i.grantor == role)
    }

    /// Adds `privs` (with their grant option if `with_option`) for
    /// `grantee` as granted by `grantor`, merged into the item the two
    /// already have.
    pub fn grant(&mut self, grantor: i64, grantee: i64, privs: Privs, with_option: bool) {
        let options = if with_option { privs } else { Privs::NONE };
        match self.0.iter_mut().find(|i| i.grantee == grantee && i.grantor == grantor) {
            Some(item) => {
                item.privs = item.privs.union(privs);
                item.options = item.options.union(options);
            }
            None => self.0.push(AclItem { grantee, grantor, privs, options }),
        }
    }

    /// Takes from `grantee` the `privs` `grantor` granted it (only their
    /// grant option if `option_only`). What the grantee granted on
    /// through an option it loses goes too if `cascade`; otherwise that
    /// is an error (2BP01), as in PostgreSQL. Items left empty go.
    /// On an error the ACL is as it was.
    pub fn revoke(&mut self, grantor: i64, grantee: i64, privs: Privs, option_only: bool, cascade: bool) -> Result<(), Error> {
        let mut changed = self.clone();
        changed.revoke_at(grantor, grantee, privs, option_only, cascade, 0)?;
        *self = changed;
        Ok(())
    }

    fn revoke_at(&mut self, grantor: i64, grantee: i64, privs: Privs, option_only: bool, cascade: bool, depth: usize) -> Result<(), Error> {
        // Each level follows a grant made through an option; a chain is
        // no longer than the roles in it, so this bounds a corrupt ACL.
        if depth > self.0.len() + 1 {
            return Err(Error::Internal("privilege grants form a cycle".into()));
        }
        let Some(pos) = self.0.iter().position(|i| i.grantee == grantee && i.grantor == grantor) else {
            return Ok(());
        };
        let lost_options = self.0[pos].options.intersect(privs);
        {
            let item = &mut self.0[pos];
            item.options = item.options.minus(privs);
            if !option_only {
                item.privs = item.privs.minus(privs);
            }
        }
        // What the grantee may still grant through another grantor.
        let still = self.held_options_except(grantee, grantor);
        let orphaned = lost_options.minus(still);
        if !orphaned.is_empty() && grantee != PUBLIC {
            let dependents: Vec<i64> = self
                .0
                .iter()
                .filter(|i| i.grantor == grantee && i.grantee != grantee && !i.privs.intersect(orphaned).is_empty())
                .map(|i| i.grantee)
                .collect();
            if !dependents.is_empty() && !cascade {
                return Err(Error::DependentPrivileges("dependent privileges exist".into()));
            }
            for d in dependents {
                self.revoke_at(grantee, d, orphaned, false, cascade, depth + 1)?;
            }
        }
        self.0.retain(|i| !i.privs.is_empty());
        Ok(())
    }

    /// The grant options `role` holds from grantors other than `except`.
    fn held_options_except(&self, role: i64, except: i64) -> Privs {
        self.0.iter().filter(|i| i.grantee == role && i.grantor != except).fold(Privs::NONE, |o, i| o.union(i.options))
    }

    /// The ACL with every item granted to or by `from` given to `to`
    /// instead (ownership changing hands), merging items that meet.
    pub fn reassigned(&self, from: i64, to: i64) -> Acl {
        let mut out = Acl::default();
        for i in &self.0 {
            let swap = |r: i64| if r == from { to } else { r };
            let (grantee, grantor) = (swap(i.grantee), swap(i.grantor));
            match out.0.iter_mut().find(|o| o.grantee == grantee && o.grantor == grantor) {
                Some(o) => {
                    o.privs = o.privs.union(i.privs);
                    o.options = o.options.union(i.options);
                }
                None => out.0.push(AclItem { grantee, grantor, privs: i.privs, options: i.options }),
            }
        }
        out
    }

    /// The ACL without anything granted to or by `role`.
    pub fn without(&self, role: i64) -> Acl {
        Acl(self.0.iter().filter(|i| i.grantee != role && i.grantor != role).cloned().collect())
    }
}

/// An object's ACL as it applies: the stored one, or the kind's default.
pub fn effective(acl: Option<&Acl>, kind: ObjectKind, owner: i64) -> std::borrow::Cow<'_, Acl> {
    match acl {
        Some(a) => std::borrow::Cow::Borrowed(a),
        None => std::borrow::Cow::Owned(Acl::default_for(kind, owner)),
    }
}

/// Parses a privilege list as the privilege functions take it
/// (`'SELECT, INSERT WITH GRANT OPTION'`): what it asks for, and whether
/// any of it asks for the grant option. 22023 for an unknown word.
pub fn parse_privilege_list(text: &str, kind: ObjectKind) -> Result<(Privs, bool), Error> {
    let mut privs = Privs::NONE;
    let mut option = false;
    for part in text.split(',') {
        let words: Vec<String> = part.split_whitespace().map(|w| w.to_ascii_uppercase()).collect();
        let (name, with_option) = match words.as_slice() {
            [p] => (p.as_str(), false),
            [p, w, g, o] if w == "WITH" && g == "GRANT" && o == "OPTION" => (p.as_str(), true),
            _ => return Err(Error::InvalidParameter(format!("unrecognized privilege type: \"{}\"", part.trim()))),
        };
        let p = Privs::named(name)
            .filter(|p| kind.all().contains(*p))
            .ok_or_else(|| Error::InvalidParameter(format!("unrecognized privilege type: \"{}\"", name.to_lowercase())))?;
        privs = privs.union(p);
        option |= with_option;
    }
    Ok((privs, option))
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: i64 = 10;
    const ALICE: i64 = 20;
    const BOB: i64 = 30;

    fn name(oid: i64) -> Option<String> {
        match oid {
            OWNER => Some("ripple".into()),
            ALICE => Some("alice".into()),
            BOB => Some("bob b".into()),
            _ => None,
        }
    }

    #[test]
    fn defaults_and_text() {
        let t = Acl::default_for(ObjectKind::Table, OWNER);
        assert_eq!(t.texts(&name), vec!["ripple=arwdDxt/ripple"]);
        assert!(t.allows(OWNER, Privs::SELECT.union(Privs::TRUNCATE)));
        assert!(!t.allows(ALICE, Privs::SELECT));
        let d = Acl::default_for(ObjectKind::Database, OWNER);
        assert_eq!(d.texts(&name), vec!["=Tc/ripple", "ripple=CTc/ripple"]);
        assert!(d.allows(ALICE, Privs::CONNECT) && !d.allows(ALICE, Privs::CREATE));
        let mut s = Acl::default_for(ObjectKind::Schema, OWNER);
        s.grant(OWNER, PUBLIC, Privs::USAGE, false);
        s.grant(OWNER, BOB, Privs::CREATE, true);
        assert_eq!(s.texts(&name), vec!["ripple=UC/ripple", "=U/ripple", "\"bob b\"=C*/ripple"]);
        assert_eq!(AclItem { grantee: 99, grantor: OWNER, privs: Privs::SELECT, options: Privs::NONE }.text(&name), "99=r/ripple");
    }

    #[test]
    fn grant_merges_and_public_counts() {
        let mut a = Acl::default_for(ObjectKind::Table, OWNER);
        a.grant(OWNER, ALICE, Privs::SELECT, false);
        a.grant(OWNER, ALICE, Privs::INSERT, true);
        assert_eq!(a.texts(&name)[1], "alice=a*r/ripple");
        assert_eq!(a.held(ALICE), (Privs::SELECT.union(Privs::INSERT), Privs::INSERT));
        assert!(!a.allows(BOB, Privs::SELECT));
        a.grant(OWNER, PUBLIC, Privs::SELECT, false);
        assert!(a.allows(BOB, Privs::SELECT) && !a.allows(BOB, Privs::INSERT));
    }

    #[test]
    fn revoke_needs_cascade_for_dependents() {
        let mut a = Acl::default_for(ObjectKind::Table, OWNER);
        a.grant(OWNER, ALICE, Privs::SELECT.union(Privs::UPDATE), true);
        a.grant(ALICE, BOB, Privs::SELECT, false);
        // Alice's own grant option goes: Bob's SELECT depends on it.
        let mut b = a.clone();
        let err = b.revoke(OWNER, ALICE, Privs::SELECT, true, false).unwrap_err();
        assert_eq!(err.sqlstate().code(), "2BP01");
        b.revoke(OWNER, ALICE, Privs::SELECT, true, true).unwrap();
        assert!(b.allows(ALICE, Privs::SELECT) && !b.held(ALICE).1.contains(Privs::SELECT));
        assert!(!b.allows(BOB, Privs::SELECT));
        // UPDATE's option has no dependents.
        a.revoke(OWNER, ALICE, Privs::UPDATE, false, false).unwrap();
        assert!(!a.allows(ALICE, Privs::UPDATE) && a.allows(BOB, Privs::SELECT));
        // Revoking everything leaves no empty item.
        a.revoke(OWNER, ALICE, Privs(0xffff), false, true).unwrap();
        assert_eq!(a.texts(&name), vec!["ripple=arwdDxt/ripple"]);
        // Revoking what was never granted is no error.
        a.revoke(OWNER, BOB, Privs::SELECT, false, false).unwrap();
    }

    #[test]
    fn an_option_from_another_grantor_keeps_dependents() {
        let mut a = Acl::default_for(ObjectKind::Table, OWNER);
        a.grant(OWNER, ALICE, Privs::SELECT, true);
        a.grant(BOB, ALICE, Privs::SELECT, true);
        a.grant(ALICE, 40, Privs::SELECT, false);
        a.revoke(OWNER, ALICE, Privs::SELECT, false, false).unwrap();
        assert!(a.allows(40, Privs::SELECT));
    }

    #[test]
    fn reassign_and_drop_role() {
        let mut a = Acl::default_for(ObjectKind::Table, ALICE);
        a.grant(ALICE, BOB, Privs::SELECT, false);
        let r = a.reassigned(ALICE, OWNER);
        assert_eq!(r.texts(&name), vec!["ripple=arwdDxt/ripple", "\"bob b\"=r/ripple"]);
        assert!(!r.mentions(ALICE) && r.mentions(BOB));
        assert!(!a.without(BOB).mentions(BOB));
    }

    #[test]
    fn privilege_words() {
        assert_eq!(Privs::named("temp"), Some(Privs::TEMPORARY));
        assert_eq!(Privs::named("bogus"), None);
        assert_eq!(parse_privilege_list("select, INSERT with grant option", ObjectKind::Table).unwrap(), (Privs::SELECT.union(Privs::INSERT), true));
        assert_eq!(parse_privilege_list("usage", ObjectKind::Table).unwrap_err().sqlstate().code(), "22023");
        assert_eq!(ObjectKind::Schema.check_applies(Privs::SELECT).unwrap_err().sqlstate().code(), "0LP01");
        assert!(ObjectKind::Table.check_applies(ObjectKind::Table.all()).is_ok());
    }
}
