//! The built-in KMS's named keys: each a list of versions of random key material, the newest
//! sealing new data keys, every one still opening what it sealed (rotation rewrites no data).
//!
//! The ring is stored as JSON sealed by the master key (see [`Keyring::seal`]); a data key's
//! ciphertext is `version u32 LE || sealed key` where the key is sealed by that version's
//! material with associated data `"strata kms v1\0" || key name || 0x00 || context`.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};

use crate::key::SEALED_KEY_SIZE;
use crate::kms::{valid_key_id, GeneratedKey, KeyInfo, KmsError, MasterKey};
use crate::DataKey;

const RING_AAD: &[u8] = b"strata kms keyring v1\0";
const DATA_KEY_LABEL: &[u8] = b"strata kms v1\0";
/// Bytes of a built-in data key ciphertext.
pub const CIPHERTEXT_SIZE: usize = 4 + SEALED_KEY_SIZE;

/// Every named key (sealed by the master key when stored).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keyring {
    /// One more than the stored ring it replaced.
    pub generation: u64,
    pub keys: BTreeMap<String, NamedKey>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedKey {
    /// Unix seconds.
    pub created: u64,
    pub enabled: bool,
    /// Oldest first; never empty.
    pub versions: Vec<KeyVersion>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyVersion {
    pub version: u32,
    /// Unix seconds.
    pub created: u64,
    /// Base64 of 32 bytes.
    pub material: String,
}

fn material(v: &KeyVersion) -> Result<DataKey, KmsError> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&v.material)
        .map_err(|_| KmsError::Internal("key material is not base64".into()))?;
    DataKey::from_slice(&bytes).map_err(|_| KmsError::Internal("key material is not 32 bytes".into()))
}

fn new_version(version: u32, now: u64) -> Result<KeyVersion, KmsError> {
    let key = DataKey::generate()?;
    Ok(KeyVersion {
        version,
        created: now,
        material: base64::engine::general_purpose::STANDARD.encode(key.as_bytes()),
    })
}

fn aad(name: &str, context: &[u8]) -> Vec<u8> {
    [DATA_KEY_LABEL, name.as_bytes(), &[0], context].concat()
}

impl NamedKey {
    fn info(&self, name: &str) -> KeyInfo {
        KeyInfo {
            name: name.to_owned(),
            version: self.versions.last().map_or(0, |v| v.version),
            created: self.created,
            enabled: self.enabled,
        }
    }
}

impl Keyring {
    /// Adds a key with one random version.
    pub fn create(&mut self, name: &str, now: u64) -> Result<(), KmsError> {
        if !valid_key_id(name) {
            return Err(KmsError::InvalidKeyId(name.to_owned()));
        }
        if self.keys.contains_key(name) {
            return Err(KmsError::KeyExists(name.to_owned()));
        }
        let key = NamedKey { created: now, enabled: true, versions: vec![new_version(1, now)?] };
        self.keys.insert(name.to_owned(), key);
        Ok(())
    }

    /// Adds a new version to `name`; new data keys use it, older ones keep opening.
    pub fn rotate(&mut self, name: &str, now: u64) -> Result<KeyInfo, KmsError> {
        let key = self.keys.get_mut(name).ok_or_else(|| KmsError::NoSuchKey(name.to_owned()))?;
        let next = key.versions.last().map_or(1, |v| v.version + 1);
        key.versions.push(new_version(next, now)?);
        Ok(key.info(name))
    }

    /// Enables or disables `name` (see [`crate::Kms::set_key_enabled`]).
    pub fn set_enabled(&mut self, name: &str, enabled: bool) -> Result<KeyInfo, KmsError> {
        let key = self.keys.get_mut(name).ok_or_else(|| KmsError::NoSuchKey(name.to_owned()))?;
        key.enabled = enabled;
        Ok(key.info(name))
    }

    pub fn list(&self) -> Vec<KeyInfo> {
        self.keys.iter().map(|(name, k)| k.info(name)).collect()
    }

    fn usable(&self, name: &str) -> Result<&NamedKey, KmsError> {
        let key = self.keys.get(name).ok_or_else(|| KmsError::NoSuchKey(name.to_owned()))?;
        if !key.enabled {
            return Err(KmsError::KeyDisabled(name.to_owned()));
        }
        Ok(key)
    }

    /// A new data key sealed by the newest version of `name`, bound to `context`.
    pub fn generate(&self, name: &str, context: &[u8]) -> Result<GeneratedKey, KmsError> {
        let named = self.usable(name)?;
        let newest =
            named.versions.last().ok_or_else(|| KmsError::Internal(format!("key {name} has no version")))?;
        let key = DataKey::generate()?;
        let mut ciphertext = newest.version.to_le_bytes().to_vec();
        ciphertext.extend(material(newest)?.seal_key(&key, &aad(name, context))?);
        Ok(GeneratedKey { key, ciphertext })
    }

    /// The data key of a ciphertext [`Keyring::generate`] made with `name` and `context`.
    pub fn decrypt(&self, name: &str, ciphertext: &[u8], context: &[u8]) -> Result<DataKey, KmsError> {
        let named = self.usable(name)?;
        if ciphertext.len() != CIPHERTEXT_SIZE {
            return Err(KmsError::Decrypt);
        }
        let (version, sealed) = ciphertext.split_at(4);
        let version = u32::from_le_bytes([version[0], version[1], version[2], version[3]]);
        let v = named.versions.iter().find(|v| v.version == version).ok_or(KmsError::Decrypt)?;
        Ok(material(v)?.open_key(sealed, &aad(name, context))?)
    }

    /// The ring as stored: JSON sealed by the master key.
    pub fn seal(&self, master: &MasterKey) -> Result<Vec<u8>, KmsError> {
        let json = serde_json::to_vec(self).map_err(|e| KmsError::Internal(e.to_string()))?;
        Ok(master.key.seal(&json, RING_AAD)?)
    }

    /// A stored ring; [`KmsError::Internal`] when the master key is not the one that sealed it
    /// or the bytes are damaged.
    pub fn open(master: &MasterKey, sealed: &[u8]) -> Result<Self, KmsError> {
        let json = master.key.open(sealed, RING_AAD).map_err(|_| {
            KmsError::Internal(
                "the key ring does not open with this master key (was STRATA_KMS_SECRET_KEY changed?)".into(),
            )
        })?;
        serde_json::from_slice(&json).map_err(|e| KmsError::Internal(format!("the key ring is damaged: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn master(seed: u8) -> MasterKey {
        MasterKey { name: "m".into(), key: DataKey::from_bytes([seed; 32]) }
    }

    #[test]
    fn rotation_keeps_old_versions_opening() {
        let mut ring = Keyring::default();
        ring.create("k", 1).expect("create");
        assert_eq!(ring.create("k", 1), Err(KmsError::KeyExists("k".into())));
        assert_eq!(ring.create("a/b", 1), Err(KmsError::InvalidKeyId("a/b".into())));
        let old = ring.generate("k", b"ctx").expect("generate");
        assert_eq!(ring.rotate("k", 2).expect("rotate").version, 2);
        let new = ring.generate("k", b"ctx").expect("generate");
        assert_eq!(&new.ciphertext[..4], &2u32.to_le_bytes());
        assert_eq!(ring.decrypt("k", &old.ciphertext, b"ctx").expect("old opens"), old.key);
        assert_eq!(ring.decrypt("k", &new.ciphertext, b"ctx").expect("new opens"), new.key);
        assert_eq!(ring.decrypt("k", &old.ciphertext, b"other"), Err(KmsError::Decrypt));
        ring.create("j", 3).expect("create");
        assert_eq!(ring.decrypt("j", &old.ciphertext, b"ctx"), Err(KmsError::Decrypt));
        assert_eq!(ring.decrypt("nope", &old.ciphertext, b"ctx"), Err(KmsError::NoSuchKey("nope".into())));
        assert_eq!(ring.decrypt("k", &old.ciphertext[..10], b"ctx"), Err(KmsError::Decrypt));
        let mut unknown_version = old.ciphertext.clone();
        unknown_version[0] = 9;
        assert_eq!(ring.decrypt("k", &unknown_version, b"ctx"), Err(KmsError::Decrypt));
        assert!(!ring.set_enabled("k", false).expect("disable").enabled);
        assert!(matches!(ring.generate("k", b""), Err(KmsError::KeyDisabled(_))));
        assert!(matches!(ring.decrypt("k", &old.ciphertext, b"ctx"), Err(KmsError::KeyDisabled(_))));
        assert!(ring.set_enabled("k", true).expect("enable").enabled);
        assert_eq!(ring.decrypt("k", &old.ciphertext, b"ctx").expect("opens again"), old.key);
        assert_eq!(ring.set_enabled("nope", false), Err(KmsError::NoSuchKey("nope".into())));
        assert_eq!(ring.list().len(), 2);
    }

    #[test]
    fn the_ring_opens_only_with_its_master_key() {
        let mut ring = Keyring { generation: 3, ..Default::default() };
        ring.create("k", 1).expect("create");
        let sealed = ring.seal(&master(1)).expect("seal");
        let material = &ring.keys["k"].versions[0].material;
        assert!(!sealed.windows(material.len()).any(|w| w == material.as_bytes()));
        assert_eq!(Keyring::open(&master(1), &sealed).expect("opens"), ring);
        assert!(matches!(Keyring::open(&master(2), &sealed), Err(KmsError::Internal(_))));
        assert!(matches!(Keyring::open(&master(1), &sealed[..20]), Err(KmsError::Internal(_))));
    }
}
