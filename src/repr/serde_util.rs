//! `#[serde(with = "...")]` helpers for the fields of plan data whose type
//! has no serde implementation of the right shape: shared (`Arc`) values,
//! floats that must survive every format bit for bit, a value computed
//! once (`OnceLock`) and maps keyed by tuples. Each keeps the derived
//! `Serialize`/`Deserialize` of the type holding the field.
//!
//! The representations use only what every serde format has (no
//! untagged or flattened data), so a non-self-describing binary format
//! reads them back as well as JSON does.

/// An `Arc<T>` as the `T` it points to (serde's own impl needs its `rc`
/// feature); deserialized into a new `Arc`, so values that shared one
/// `Arc` before come back as separate copies.
pub mod arc {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::Arc;

    pub fn serialize<T: Serialize, S: Serializer>(value: &Arc<T>, serializer: S) -> Result<S::Ok, S::Error> {
        T::serialize(value, serializer)
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(deserializer: D) -> Result<Arc<T>, D::Error> {
        T::deserialize(deserializer).map(Arc::new)
    }
}

/// An `f64` as its IEEE bits: exact for every value (NaN and infinities,
/// which JSON has no number for, -0.0, and finite values that a format's
/// decimal parsing could round by one unit in the last place).
pub mod f64_bits {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(value.to_bits())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        u64::deserialize(deserializer).map(f64::from_bits)
    }
}

/// An `f32` as its IEEE bits (as [`f64_bits`]).
pub mod f32_bits {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f32, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(value.to_bits())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f32, D::Error> {
        u32::deserialize(deserializer).map(f32::from_bits)
    }
}

/// A `OnceLock<T>` as an `Option<T>`: its value if it was set.
pub mod once_lock {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::sync::OnceLock;

    pub fn serialize<T: Serialize, S: Serializer>(value: &OnceLock<T>, serializer: S) -> Result<S::Ok, S::Error> {
        value.get().serialize(serializer)
    }

    pub fn deserialize<'de, T: Deserialize<'de>, D: Deserializer<'de>>(deserializer: D) -> Result<OnceLock<T>, D::Error> {
        Ok(match Option::<T>::deserialize(deserializer)? {
            Some(v) => OnceLock::from(v),
            None => OnceLock::new(),
        })
    }
}

/// A `BTreeMap` as a sequence of (key, value) pairs: JSON's object keys
/// are strings, so a map keyed by a tuple has no JSON form of its own.
pub mod map_as_pairs {
    use serde::ser::SerializeSeq;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};
    use std::collections::BTreeMap;

    pub fn serialize<K: Serialize, V: Serialize, S: Serializer>(map: &BTreeMap<K, V>, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(map.len()))?;
        for pair in map {
            seq.serialize_element(&pair)?;
        }
        seq.end()
    }

    pub fn deserialize<'de, K, V, D>(deserializer: D) -> Result<BTreeMap<K, V>, D::Error>
    where
        K: Deserialize<'de> + Ord,
        V: Deserialize<'de>,
        D: Deserializer<'de>,
    {
        Ok(Vec::<(K, V)>::deserialize(deserializer)?.into_iter().collect())
    }
}
