//! TLS for the S3 port: a certificate chain and key from a folder (`public.crt`,
//! `private.key`, PEM), served with rustls (TLS 1.2 and 1.3, ALPN h2 and http/1.1).

use std::path::Path;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

pub const CERT_FILE: &str = "public.crt";
pub const KEY_FILE: &str = "private.key";

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct TlsError(String);

/// The acceptor for the certificate and key in `dir`.
pub fn acceptor(dir: &Path) -> Result<tokio_rustls::TlsAcceptor, TlsError> {
    let (cert_path, key_path) = (dir.join(CERT_FILE), dir.join(KEY_FILE));
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&cert_path)
        .and_then(|it| it.collect::<Result<_, _>>())
        .map_err(|e| TlsError(format!("reading {}: {e}", cert_path.display())))?;
    if certs.is_empty() {
        return Err(TlsError(format!("{} holds no certificate", cert_path.display())));
    }
    let key = PrivateKeyDer::from_pem_file(&key_path)
        .map_err(|e| TlsError(format!("reading {}: {e}", key_path.display())))?;
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| {
            TlsError(format!(
                "{} and {} do not make a certificate: {e}",
                cert_path.display(),
                key_path.display()
            ))
        })?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}
