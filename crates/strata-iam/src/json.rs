//! JSON as policies need it: like `serde_json::Value`, except that an object naming one key
//! twice is refused. serde_json keeps the last of duplicated keys, so a document such as
//! `{"Effect": "Deny", "Effect": "Allow"}` would otherwise read differently here and in the
//! tool that wrote it; AWS refuses it too.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Parses `bytes`, refusing duplicate keys (the error carries serde_json's line and column).
pub(crate) fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    serde_json::from_slice::<Strict>(bytes).map(|s| s.0)
}

struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Strict, D::Error> {
        deserializer.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }

    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(Number::from_f64(n).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut list = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            list.push(v);
        }
        Ok(Value::Array(list))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(de::Error::custom(format_args!("duplicate key {key:?}")));
            }
            let Strict(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_as_serde_json_reads_them() {
        let doc = br#"{"a": [1, -2, 2.5, "x", true, null, {"b": {}}], "c": 18446744073709551615}"#;
        assert_eq!(parse(doc).expect("json"), serde_json::from_slice::<Value>(doc).expect("json"));
    }

    #[test]
    fn duplicate_keys_are_refused_where_they_are() {
        let e = parse(b"{\"Statement\": {\n  \"Effect\": \"Deny\",\n  \"Effect\": \"Allow\"}}")
            .expect_err("refused");
        assert!(e.to_string().starts_with("duplicate key \"Effect\""), "{e}");
        assert_eq!(e.line(), 3);
        assert!(parse(br#"[{"a": 1}, {"a": 1}]"#).is_ok(), "the same key in two objects is fine");
    }
}
