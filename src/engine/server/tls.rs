//! TLS for the server engines: one set of knobs every server engine shares
//! (`tls_ca`, `tls_cert`, `tls_key`) and the rustls client configuration they make.
//!
//! Whether a connection is encrypted is said by the URL, in the server's own spelling
//! (`rediss://`, PostgreSQL's `sslmode`, MariaDB's `ssl-mode`, etcd's `https://`,
//! MongoDB's `tls=true`); the knobs only say whom to trust and who the client is. A
//! certificate given for a URL that asks for no TLS is refused, so a run never
//! measures a plain connection its user believed encrypted.
//!
//! Every crate that speaks TLS for kvmark (its own Redis pipes, tokio-postgres,
//! mysql_async, tonic for etcd, the MongoDB driver) uses rustls with the ring
//! provider, installed as the process's default before any of them builds a
//! configuration ([`install_provider`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Once};

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::engine::{KnobDef, KnobValue, OptionError};

/// The files a server engine's TLS knobs name (None: not given).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// `tls_ca`: the certificates to trust instead of the system's.
    pub ca: Option<PathBuf>,
    /// `tls_cert`: the client's certificate chain, for servers that ask for one.
    pub cert: Option<PathBuf>,
    /// `tls_key`: the private key of `cert`.
    pub key: Option<PathBuf>,
}

impl TlsFiles {
    /// True when any file is given.
    pub fn any(&self) -> bool {
        self.ca.is_some() || self.cert.is_some() || self.key.is_some()
    }

    /// Refuses files given for a URL that asks for no TLS (`how` says how the URL
    /// asks for it, for the message).
    pub fn refuse_without_tls(&self, how: &str) -> Result<(), String> {
        match self.any() {
            true => Err(format!(
                "{} is given but the URL asks for no TLS: {how}",
                self.given().join(", ")
            )),
            false => Ok(()),
        }
    }

    /// The client certificate and its key, which go together (None: neither given).
    pub fn identity(&self) -> Result<Option<(&Path, &Path)>, String> {
        match (&self.cert, &self.key) {
            (None, None) => Ok(None),
            (Some(cert), Some(key)) => Ok(Some((cert, key))),
            (Some(_), None) => Err("tls_cert is given without tls_key: give both".into()),
            (None, Some(_)) => Err("tls_key is given without tls_cert: give both".into()),
        }
    }

    /// The files' contents, for client crates that take PEM bytes (read now, so a
    /// reconnection reads no file).
    pub fn read_pem(&self) -> Result<TlsPem, String> {
        let read = |f: &Path| std::fs::read(f).map_err(|e| format!("cannot read {}: {e}", f.display()));
        Ok(TlsPem {
            ca: self.ca.as_deref().map(read).transpose()?,
            identity: match self.identity()? {
                Some((cert, key)) => Some((read(cert)?, read(key)?)),
                None => None,
            },
        })
    }

    /// The knobs given, for messages.
    fn given(&self) -> Vec<&'static str> {
        [("tls_ca", &self.ca), ("tls_cert", &self.cert), ("tls_key", &self.key)]
            .into_iter()
            .filter(|(_, f)| f.is_some())
            .map(|(k, _)| k)
            .collect()
    }
}

/// The PEM contents of [`TlsFiles`].
pub struct TlsPem {
    /// The certificates to trust (None: the client crate's default roots).
    pub ca: Option<Vec<u8>>,
    /// The client's certificate chain and private key.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// Settings that hold [`TlsFiles`], so the shared knobs can set them.
pub trait HasTls {
    /// The settings' TLS files.
    fn tls_files(&mut self) -> &mut TlsFiles;
}

/// The `tls_ca` knob.
pub const fn ca_knob<S: HasTls>() -> KnobDef<S> {
    KnobDef {
        name: "tls_ca",
        help: "a PEM file of the certificates to trust for the server's (a private CA); empty: the system's roots",
        default: String::new,
        set: set_ca::<S>,
    }
}

/// The `tls_cert` knob.
pub const fn cert_knob<S: HasTls>() -> KnobDef<S> {
    KnobDef {
        name: "tls_cert",
        help: "a PEM file of the client's certificate chain, for a server that checks clients (with tls_key); empty: none",
        default: String::new,
        set: set_cert::<S>,
    }
}

/// The `tls_key` knob.
pub const fn key_knob<S: HasTls>() -> KnobDef<S> {
    KnobDef {
        name: "tls_key",
        help: "a PEM file of the private key of tls_cert; empty: none",
        default: String::new,
        set: set_key::<S>,
    }
}

fn set_ca<S: HasTls>(s: &mut S, v: &KnobValue<'_>) -> Result<(), OptionError> {
    s.tls_files().ca = checked(v, |p| certificates(p).map(drop))?;
    Ok(())
}

fn set_cert<S: HasTls>(s: &mut S, v: &KnobValue<'_>) -> Result<(), OptionError> {
    s.tls_files().cert = checked(v, |p| certificates(p).map(drop))?;
    Ok(())
}

fn set_key<S: HasTls>(s: &mut S, v: &KnobValue<'_>) -> Result<(), OptionError> {
    s.tls_files().key = checked(v, |p| private_key(p).map(drop))?;
    Ok(())
}

/// The path of `v` once `check` reads it (None for an empty value).
fn checked(v: &KnobValue<'_>, check: impl Fn(&Path) -> Result<(), String>) -> Result<Option<PathBuf>, OptionError> {
    if v.text.trim().is_empty() {
        return Ok(None);
    }
    let path = PathBuf::from(v.text);
    check(&path).map_err(|why| v.refuse(why))?;
    Ok(Some(path))
}

/// The certificates of a PEM file (at least one).
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("cannot read certificates from {shown}: {}", pem_error(&e)))?;
    if certs.is_empty() {
        return Err(format!(
            "{shown} holds no certificate (a PEM file with -----BEGIN CERTIFICATE----- blocks is expected)"
        ));
    }
    Ok(certs)
}

/// The private key of a PEM file.
fn private_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    PrivateKeyDer::from_pem_file(path)
        .map_err(|e| format!("cannot read a private key from {}: {}", path.display(), pem_error(&e)))
}

fn pem_error(e: &rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(io) => io.to_string(),
        rustls::pki_types::pem::Error::NoItemsFound => "no PEM block of that kind in it".into(),
        other => format!("not PEM ({other:?})"),
    }
}

/// How much of the server's certificate is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// Its chain up to a trusted root, and that it names the host connected to.
    Full,
    /// Its chain only (PostgreSQL's verify-ca, MariaDB's VERIFY_CA).
    Chain,
    /// Nothing: the connection is encrypted but the server unauthenticated
    /// (PostgreSQL's require without a root certificate, MariaDB's REQUIRED).
    Nothing,
}

/// Installs ring as the process's rustls provider, once, before any crate builds a
/// configuration of its own (the redis crate, mysql_async and the MongoDB driver
/// ask for the default).
pub fn install_provider() {
    static ONCE: Once = Once::new();
    // Err means a provider is installed already, which is all that is needed.
    ONCE.call_once(|| drop(rustls::crypto::ring::default_provider().install_default()));
}

/// The client configuration for `files`, checking the server as `verify` says.
/// Errors name the file (the caller names the engine).
pub fn client_config(files: &TlsFiles, verify: Verify) -> Result<ClientConfig, String> {
    install_provider();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match verify {
        Verify::Nothing => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified(provider))),
        Verify::Full | Verify::Chain => {
            let roots = Arc::new(roots(files)?);
            match verify {
                Verify::Full => builder.with_root_certificates(roots),
                _ => {
                    let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
                        .build()
                        .map_err(|e| e.to_string())?;
                    builder
                        .dangerous()
                        .with_custom_certificate_verifier(Arc::new(ChainOnly(inner)))
                }
            }
        }
    };
    match files.identity()? {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain = certificates(cert)?;
            let key = private_key(key)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("tls_cert and tls_key do not make a client identity: {e}"))
        }
    }
}

/// The roots to trust: `tls_ca`'s certificates, else the system's.
fn roots(files: &TlsFiles) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match &files.ca {
        Some(ca) => {
            for cert in certificates(ca)? {
                roots
                    .add(cert)
                    .map_err(|e| format!("tls_ca {}: a certificate rustls cannot use: {e}", ca.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            roots.add_parsable_certificates(found.certs);
            if roots.is_empty() {
                return Err(format!(
                    "no trusted certificates on this system ({} error(s) reading them); give the server's CA as tls_ca=FILE",
                    found.errors.len()
                ));
            }
        }
    }
    Ok(roots)
}

/// The name a server is checked against: a DNS name or an IP address.
pub fn server_name(host: &str) -> Result<ServerName<'static>, String> {
    // An IPv6 host comes bracketed from URLs.
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(bare.to_string()).map_err(|e| format!("'{host}' cannot be checked against a certificate: {e}"))
}

/// Checks the chain, not the name.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// Checks no certificate, only that the handshake's signatures are the certificate's
/// (so the encryption is real, the server unauthenticated).
struct Unverified(Arc<CryptoProvider>);

impl fmt::Debug for Unverified {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Unverified")
    }
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_non_pem_file_is_refused_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = certificates(&junk).unwrap_err();
        assert!(e.contains("junk.pem") && e.contains("no certificate"), "{e}");
        let e = certificates(&dir.path().join("absent.pem")).unwrap_err();
        assert!(e.contains("absent.pem") && e.contains("cannot read"), "{e}");
        let e = private_key(&junk).unwrap_err();
        assert!(e.contains("junk.pem") && e.contains("private key"), "{e}");
    }

    #[test]
    fn a_client_certificate_needs_its_key() {
        let files = TlsFiles {
            cert: Some("/nonexistent/client.pem".into()),
            ..TlsFiles::default()
        };
        let e = client_config(&files, Verify::Nothing).unwrap_err();
        assert!(e.contains("without tls_key"), "{e}");
    }

    #[test]
    fn files_for_a_plain_url_are_refused() {
        let files = TlsFiles {
            ca: Some("ca.pem".into()),
            ..TlsFiles::default()
        };
        let e = files.refuse_without_tls("use rediss://").unwrap_err();
        assert!(e.contains("tls_ca is given") && e.contains("rediss://"), "{e}");
        assert!(TlsFiles::default().refuse_without_tls("").is_ok());
    }
}
