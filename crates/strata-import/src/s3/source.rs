//! The S3 endpoint an import reads from (`strata import s3 --from`): its buckets with their
//! settings, every version of every key in the order the endpoint lists them, and each
//! version's bytes, metadata, tags and lock, read with the calls any S3 server answers
//! (ListBuckets, the bucket `GET ?versioning` family, ListObjectVersions, GetObject by version
//! and part, GetObjectTagging). Answers are outside input: a malformed one is an error naming
//! the call, never a panic.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::{Method, StatusCode};
use http_body_util::BodyExt;
use quick_xml::events::Event;
use strata_client::client::{BodyMode, Client, Endpoint, Outcome};

use crate::minio::bucket::BucketSettings;

/// Characters left as they are in a query value (S3's unreserved set).
const QUERY: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');

/// `2009-10-12T17:50:30.123Z` (any digits of fraction, or none) in nanoseconds since the Unix
/// epoch.
fn parse_time(s: &str) -> Option<u64> {
    let seconds = strata_types::time::parse_iso8601(s)?;
    let fraction = s.strip_suffix('Z')?.split_once('.').map_or("", |(_, f)| f);
    let digits: String = fraction.chars().chain(std::iter::repeat('0')).take(9).collect();
    seconds.checked_mul(1_000_000_000)?.checked_add(digits.parse().ok()?)
}

fn encode(value: &str) -> String {
    percent_encoding::utf8_percent_encode(value, QUERY).to_string()
}

/// One entry of a ListObjectVersions answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceVersion {
    pub key: String,
    /// As the endpoint names it; `"null"` for the version written while versioning was off.
    pub version_id: String,
    pub delete_marker: bool,
    /// Nanoseconds since the Unix epoch (S3 lists milliseconds).
    pub last_modified: u64,
    /// Without quotes.
    pub etag: String,
    pub size: u64,
}

/// A page of ListObjectVersions: its entries in the order listed, and where the next starts.
#[derive(Debug, Default)]
pub struct VersionsPage {
    pub entries: Vec<SourceVersion>,
    pub next: Option<(String, String)>,
}

/// An S3 endpoint and the credentials to read it with.
pub struct Source {
    client: Client,
}

/// The text of each element named `name` in `doc`, in order.
fn texts(doc: &[u8], name: &[u8]) -> Result<Vec<String>> {
    let mut reader = quick_xml::Reader::from_reader(doc);
    let (mut out, mut inside) = (Vec::new(), false);
    loop {
        match reader.read_event().context("reading an XML answer")? {
            Event::Start(e) if e.local_name().as_ref() == name => {
                inside = true;
                out.push(String::new());
            }
            Event::End(e) if e.local_name().as_ref() == name => inside = false,
            Event::Eof => return Ok(out),
            event if inside => {
                if let Some(last) = out.last_mut() {
                    strata_s3::xml::append_text(&event, last).map_err(|_| anyhow!("an XML text"))?;
                }
            }
            _ => {}
        }
    }
}

/// Parses a ListObjectVersions answer, keeping versions and delete markers in listed order.
pub fn parse_versions(doc: &[u8]) -> Result<VersionsPage> {
    let mut reader = quick_xml::Reader::from_reader(doc);
    let mut page = VersionsPage::default();
    let (mut truncated, mut next_key, mut next_version) = (false, String::new(), String::new());
    let mut entry: Option<SourceVersion> = None;
    let mut field = Vec::new();
    let mut text = String::new();
    loop {
        match reader.read_event().context("reading the version listing")? {
            Event::Start(e) => {
                let name = e.local_name().as_ref().to_vec();
                match name.as_slice() {
                    b"Version" | b"DeleteMarker" if entry.is_none() => {
                        entry = Some(SourceVersion {
                            delete_marker: name == b"DeleteMarker",
                            ..Default::default()
                        })
                    }
                    _ => {}
                }
                field = name;
                text.clear();
            }
            event @ (Event::Text(_) | Event::GeneralRef(_)) => {
                strata_s3::xml::append_text(&event, &mut text).map_err(|_| anyhow!("a listing's text"))?
            }
            Event::End(e) => {
                let name = e.local_name().as_ref().to_vec();
                match (entry.as_mut(), name.as_slice()) {
                    (Some(_), b"Version" | b"DeleteMarker") => {
                        if let Some(done) = entry.take() {
                            if done.key.is_empty() {
                                bail!("a listed version has no key");
                            }
                            page.entries.push(done);
                        }
                    }
                    (Some(v), b"Key") => v.key = std::mem::take(&mut text),
                    (Some(v), b"VersionId") => v.version_id = std::mem::take(&mut text),
                    (Some(v), b"LastModified") => {
                        v.last_modified = parse_time(text.trim())
                            .ok_or_else(|| anyhow!("a listed time is not a date: {text:?}"))?
                    }
                    (Some(v), b"ETag") => v.etag = text.trim().trim_matches('"').to_owned(),
                    (Some(v), b"Size") => {
                        v.size = text.trim().parse().with_context(|| format!("a listed size: {text:?}"))?
                    }
                    (None, b"IsTruncated") => truncated = text.trim() == "true",
                    (None, b"NextKeyMarker") => next_key = std::mem::take(&mut text),
                    (None, b"NextVersionIdMarker") => next_version = std::mem::take(&mut text),
                    _ => {}
                }
                field.clear();
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if truncated {
        if next_key.is_empty() {
            bail!("a truncated version listing names no next key");
        }
        page.next = Some((next_key, next_version));
    }
    Ok(page)
}

impl Source {
    pub fn new(endpoint: Endpoint, parallel: usize) -> Result<Self> {
        Ok(Self { client: Client::new(endpoint, parallel)? })
    }

    async fn call(&self, bucket: &str, key: &str, query: &str) -> Result<Outcome> {
        self.client
            .request(Method::GET, bucket, key, query, Bytes::new(), BodyMode::Keep)
            .await
            .with_context(|| format!("GET /{bucket}/{key}?{query}"))
    }

    /// A successful answer's body; an error names the call and the endpoint's code.
    fn body(o: Outcome, what: &str) -> Result<Bytes> {
        if !o.status.is_success() {
            bail!("{what}: {} {}", o.status.as_u16(), strata_client::client::error_code(&o));
        }
        Ok(o.body.unwrap_or_default())
    }

    /// The buckets the credentials can see.
    pub async fn buckets(&self) -> Result<Vec<String>> {
        let o = self.call("", "", "").await?;
        texts(&Self::body(o, "listing the buckets")?, b"Name")
    }

    /// A bucket setting's document, or empty when the bucket has none (S3 answers 404 with a
    /// code of its own for each).
    async fn setting(&self, bucket: &str, query: &str) -> Result<String> {
        let o = self.call(bucket, "", query).await?;
        if o.status == StatusCode::NOT_FOUND && strata_client::client::error_code(&o) != "NoSuchBucket" {
            return Ok(String::new());
        }
        let body = Self::body(o, &format!("bucket {bucket}: ?{query}"))?;
        String::from_utf8(body.to_vec()).map_err(|_| anyhow!("bucket {bucket}: ?{query} is not text"))
    }

    /// A bucket's settings, as the documents the endpoint answers with.
    pub async fn settings(&self, bucket: &str) -> Result<BucketSettings> {
        let versioning = self.setting(bucket, "versioning=").await?;
        // An endpoint without object lock answers other errors than 404 (400, 501): none set.
        let object_lock = self.setting(bucket, "object-lock=").await.unwrap_or_default();
        Ok(BucketSettings {
            name: bucket.to_owned(),
            versioning_xml: versioning,
            object_lock_xml: object_lock,
            policy_json: self.setting(bucket, "policy=").await?,
            lifecycle_xml: self.setting(bucket, "lifecycle=").await?,
            tagging_xml: self.setting(bucket, "tagging=").await?,
            encryption_xml: self.setting(bucket, "encryption=").await.unwrap_or_default(),
            ..Default::default()
        })
    }

    /// A page of the bucket's versions after `marker` (key, version id).
    pub async fn versions(&self, bucket: &str, marker: Option<&(String, String)>) -> Result<VersionsPage> {
        let mut query = "versions=".to_owned();
        if let Some((key, version)) = marker {
            query = format!("key-marker={}&version-id-marker={}&versions=", encode(key), encode(version));
        }
        let o = self.call(bucket, "", &query).await?;
        parse_versions(&Self::body(o, &format!("listing the versions of {bucket}"))?)
    }

    /// A version's tags (empty when it has none).
    pub async fn tags(&self, bucket: &str, key: &str, version_id: &str) -> Result<BTreeMap<String, String>> {
        let o = self.call(bucket, key, &format!("tagging=&versionId={}", encode(version_id))).await?;
        let body = Self::body(o, &format!("the tags of {bucket}/{key}"))?;
        strata_s3::documents::tagging(&body).map_err(|e| anyhow!("the tags of {bucket}/{key}: {e}"))
    }

    /// The bytes of part `n` of a multipart version (HEAD with `partNumber`), `If-Match` its
    /// listed ETag.
    pub async fn part_size(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
        n: u32,
        etag: &str,
    ) -> Result<u64> {
        let mut query = format!("partNumber={n}&versionId={}", encode(version_id));
        if version_id.is_empty() {
            query = format!("partNumber={n}");
        }
        let condition = (!etag.is_empty()).then(|| ("if-match".to_owned(), format!("\"{etag}\"")));
        let resp = self.client.open(Method::HEAD, bucket, key, &query, condition.as_slice()).await?;
        if !resp.status().is_success() {
            bail!("HEAD {bucket}/{key} part {n} (version {version_id}): {}", resp.status().as_u16());
        }
        content_length(resp.headers())
            .with_context(|| format!("HEAD {bucket}/{key} part {n}: no Content-Length"))
    }

    /// Opens a version (`part`: one part of a multipart object, numbered from 1) for reading,
    /// `If-Match` the ETag it was listed with (empty: none).
    pub async fn open(
        &self,
        bucket: &str,
        key: &str,
        version_id: &str,
        part: Option<u32>,
        etag: &str,
    ) -> Result<http::Response<hyper::body::Incoming>> {
        let mut query = match part {
            Some(n) => format!("partNumber={n}&versionId={}", encode(version_id)),
            None => format!("versionId={}", encode(version_id)),
        };
        if version_id.is_empty() {
            query = part.map(|n| format!("partNumber={n}")).unwrap_or_default();
        }
        let condition = (!etag.is_empty()).then(|| ("if-match".to_owned(), format!("\"{etag}\"")));
        let resp = self.client.open(Method::GET, bucket, key, &query, condition.as_slice()).await?;
        if !resp.status().is_success() {
            let status = resp.status();
            let body = resp.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
            let code = texts(&body, b"Code").ok().and_then(|c| c.into_iter().next()).unwrap_or_default();
            bail!("GET {bucket}/{key} (version {version_id}): {} {code}", status.as_u16());
        }
        Ok(resp)
    }
}

/// A response's `Content-Length`.
pub fn content_length(headers: &http::HeaderMap) -> Option<u64> {
    headers.get(http::header::CONTENT_LENGTH)?.to_str().ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_keeps_versions_and_markers_in_order() {
        let doc = br#"<?xml version="1.0" encoding="UTF-8"?>
<ListVersionsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name><Prefix></Prefix>
<KeyMarker></KeyMarker><VersionIdMarker></VersionIdMarker><NextKeyMarker>k&amp;2</NextKeyMarker>
<NextVersionIdMarker>v9</NextVersionIdMarker><MaxKeys>1000</MaxKeys><IsTruncated>true</IsTruncated>
<Version><Key>k1</Key><VersionId>v3</VersionId><IsLatest>true</IsLatest><LastModified>2026-11-28T01:02:03.456Z</LastModified><ETag>&quot;abc-2&quot;</ETag><Size>12</Size><StorageClass>STANDARD</StorageClass></Version>
<DeleteMarker><Key>k1</Key><VersionId>v2</VersionId><IsLatest>false</IsLatest><LastModified>2026-11-28T01:02:03.000Z</LastModified></DeleteMarker>
<Version><Key>k1</Key><VersionId>null</VersionId><IsLatest>false</IsLatest><LastModified>2026-11-27T00:00:00.000Z</LastModified><ETag>"d41d8cd98f00b204e9800998ecf8427e"</ETag><Size>0</Size></Version>
</ListVersionsResult>"#;
        let page = parse_versions(doc).expect("parse");
        let shape: Vec<(&str, &str, bool, u64)> = page
            .entries
            .iter()
            .map(|v| (v.key.as_str(), v.version_id.as_str(), v.delete_marker, v.size))
            .collect();
        assert_eq!(shape, [("k1", "v3", false, 12), ("k1", "v2", true, 0), ("k1", "null", false, 0)]);
        assert_eq!(page.entries[0].etag, "abc-2");
        assert_eq!(page.entries[0].last_modified % 1_000_000_000, 456_000_000);
        assert!(page.entries[0].last_modified > page.entries[1].last_modified);
        assert_eq!(page.next, Some(("k&2".to_owned(), "v9".to_owned())));
        // Malformed answers are errors, not panics.
        for bad in [
            &b"<ListVersionsResult><Version><Key>k</Key><Size>x</Size></Version></ListVersionsResult>"[..],
            b"<ListVersionsResult><Version><Key>k</Key><LastModified>yesterday</LastModified></Version></ListVersionsResult>",
            b"<ListVersionsResult><Version><Size>1</Size></Version></ListVersionsResult>",
            b"<ListVersionsResult><IsTruncated>true</IsTruncated></ListVersionsResult>",
        ] {
            assert!(parse_versions(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
