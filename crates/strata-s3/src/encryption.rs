//! Bucket default encryption: GetBucketEncryption, PutBucketEncryption, DeleteBucketEncryption.
//! The configuration is kept in the bucket record; every new object sent without encryption
//! headers is encrypted as it says (see [`crate::sse::requested`]).

use http::StatusCode;
use serde::Deserialize;
use strata_object::BucketEncryption;
use strata_types::BucketName;

use crate::body::RequestBody;
use crate::context::{Reply, Request};
use crate::error::{S3Error, S3ErrorCode};
use crate::xml;

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Configuration {
    #[serde(rename = "Rule", default)]
    rules: Vec<RuleXml>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RuleXml {
    apply_server_side_encryption_by_default: Option<ByDefault>,
    bucket_key_enabled: Option<bool>,
}

#[derive(Deserialize)]
struct ByDefault {
    #[serde(rename = "SSEAlgorithm")]
    algorithm: String,
    #[serde(rename = "KMSMasterKeyID")]
    kms_key_id: Option<String>,
}

fn invalid(message: &str) -> S3Error {
    S3Error::new(S3ErrorCode::InvalidArgument, message)
}

/// A `ServerSideEncryptionConfiguration` document: one rule, `AES256`, `aws:kms` or
/// `aws:kms:dsse` (the two with an optional key id).
pub(crate) fn parse(doc: &[u8]) -> Result<BucketEncryption, S3Error> {
    let text = std::str::from_utf8(doc).map_err(|_| crate::error::malformed_xml())?;
    let config: Configuration = quick_xml::de::from_str(text).map_err(|_| crate::error::malformed_xml())?;
    let [rule] = config.rules.as_slice() else {
        return Err(crate::error::malformed_xml());
    };
    let default =
        rule.apply_server_side_encryption_by_default.as_ref().ok_or_else(crate::error::malformed_xml)?;
    let key_id = default.kms_key_id.as_deref().map(str::trim).filter(|k| !k.is_empty());
    match (default.algorithm.trim(), key_id) {
        ("AES256", Some(_)) => {
            Err(invalid("a KMSMasterKeyID is allowed only with the aws:kms and aws:kms:dsse algorithms"))
        }
        ("AES256" | "aws:kms" | "aws:kms:dsse", _) => Ok(BucketEncryption {
            algorithm: default.algorithm.trim().to_owned(),
            kms_key_id: key_id.map(str::to_owned),
            bucket_key_enabled: rule.bucket_key_enabled.unwrap_or(false),
        }),
        _ => Err(invalid("The SSEAlgorithm must be AES256, aws:kms or aws:kms:dsse")),
    }
}

pub async fn get_bucket_encryption(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    let config = req.node.layer.with_bucket_record(bucket, |r| r.encryption.clone())?;
    let Some(c) = config else {
        return Err(S3Error::new(
            S3ErrorCode::ServerSideEncryptionConfigurationNotFoundError,
            "The server side encryption configuration was not found",
        ));
    };
    let mut x = xml::Writer::new();
    x.root("ServerSideEncryptionConfiguration");
    x.open("Rule");
    x.open("ApplyServerSideEncryptionByDefault");
    x.elem("SSEAlgorithm", &c.algorithm);
    if let Some(k) = &c.kms_key_id {
        x.elem("KMSMasterKeyID", k);
    }
    x.close("ApplyServerSideEncryptionByDefault");
    x.elem("BucketKeyEnabled", if c.bucket_key_enabled { "true" } else { "false" });
    x.close("Rule");
    x.close("ServerSideEncryptionConfiguration");
    Ok(Reply::xml(x.finish()))
}

pub async fn put_bucket_encryption(
    req: &Request<'_>,
    bucket: &BucketName,
    body: RequestBody,
) -> Result<Reply, S3Error> {
    let doc = req.bucket_document(bucket, body).await?;
    let config = parse(&doc)?;
    // A default no new object could be written with is refused now, not on every later PUT.
    if req.node.kms.is_none() {
        return Err(S3Error::new(
            S3ErrorCode::NotImplemented,
            "Server-side encryption with a KMS needs a KMS: set STRATA_KMS_SECRET_KEY (or STRATA_KMS_VAULT_ENDPOINT).",
        ));
    }
    req.node.layer.update_bucket(bucket, |r| r.encryption = Some(config)).await?;
    Ok(Reply::empty(StatusCode::OK))
}

pub async fn delete_bucket_encryption(req: &Request<'_>, bucket: &BucketName) -> Result<Reply, S3Error> {
    req.node.layer.update_bucket(bucket, |r| r.encryption = None).await?;
    Ok(Reply::empty(StatusCode::NO_CONTENT))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(inner: &str) -> Vec<u8> {
        format!(r#"<ServerSideEncryptionConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">{inner}</ServerSideEncryptionConfiguration>"#).into_bytes()
    }

    #[test]
    fn configurations() {
        let rule = |alg: &str, key: &str| {
            format!("<Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>{alg}</SSEAlgorithm>{key}</ApplyServerSideEncryptionByDefault><BucketKeyEnabled>true</BucketKeyEnabled></Rule>")
        };
        let c = parse(&doc(&rule("AES256", ""))).expect("parses");
        assert_eq!((c.algorithm.as_str(), c.kms_key_id, c.bucket_key_enabled), ("AES256", None, true));
        let c = parse(&doc(&rule("aws:kms", "<KMSMasterKeyID>k1</KMSMasterKeyID>"))).expect("parses");
        assert_eq!(c.kms_key_id.as_deref(), Some("k1"));
        let code = |d: Vec<u8>| parse(&d).map_err(|e| e.code).err();
        let c = parse(&doc(&rule("aws:kms:dsse", "<KMSMasterKeyID>k2</KMSMasterKeyID>"))).expect("parses");
        assert_eq!((c.algorithm.as_str(), c.kms_key_id.as_deref()), ("aws:kms:dsse", Some("k2")));
        assert_eq!(code(doc(&rule("aws:kms:other", ""))), Some(S3ErrorCode::InvalidArgument));
        assert_eq!(
            code(doc(&rule("AES256", "<KMSMasterKeyID>k1</KMSMasterKeyID>"))),
            Some(S3ErrorCode::InvalidArgument)
        );
        assert_eq!(code(doc("")), Some(S3ErrorCode::MalformedXML));
        assert_eq!(code(doc(&format!("{0}{0}", rule("AES256", "")))), Some(S3ErrorCode::MalformedXML));
        assert_eq!(code(b"<nope".to_vec()), Some(S3ErrorCode::MalformedXML));
        assert_eq!(code(doc("<Rule></Rule>")), Some(S3ErrorCode::MalformedXML));
    }
}
