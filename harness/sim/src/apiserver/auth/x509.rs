//! Client-certificate authentication, as kube-apiserver's x509 authenticator with
//! `CommonNameUserConversion` (k8s.io/apiserver/pkg/authentication/request/x509/x509.go): the
//! subject's CommonName is the user, its Organizations the groups, the UID attribute
//! (AllowParsingUserUIDFromCertAuth, beta and on in 1.35) the uid, and the certificate's SHA-256
//! fingerprint the credential id. The TLS layer has already verified the chain against the
//! client CA (`--client-ca-file`) before this reads the leaf.

use super::{UserInfo, AUTHENTICATED};
use sha2::{Digest, Sha256};
use x509_parser::der_parser::oid::Oid;

/// The user a verified client certificate names, put on each request of its connection.
#[derive(Debug, Clone, PartialEq)]
pub struct CertificateUser(pub UserInfo);

/// The subject attribute kube-apiserver reads the user's UID from (`1.3.6.1.4.1.57683.2`).
const UID_OID: &[u64] = &[1, 3, 6, 1, 4, 1, 57683, 2];

/// The user of a leaf certificate (DER): `None` when it does not parse or has no CommonName,
/// which upstream treats as "not authenticated by this certificate" (the request goes on to
/// the token authenticators, then 401).
pub fn user_of(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    // Go's pkix.Name keeps the last CommonName of the sequence.
    let name = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()
        .filter(|cn| !cn.is_empty())?
        .to_string();
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok().map(String::from))
        .collect();
    let uid_oid = Oid::from(UID_OID).ok()?;
    let uid = subject
        .iter_by_oid(&uid_oid)
        .filter_map(|a| a.as_str().ok())
        .next()
        .unwrap_or("")
        .to_string();
    // The AuthenticatedGroupAdder every authenticator's answer goes through.
    if !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.into());
    }
    let fingerprint: String = Sha256::digest(der)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Some(UserInfo {
        name,
        uid,
        groups,
        extra: [(
            "authentication.kubernetes.io/credential-id".to_string(),
            vec![format!("X509SHA256={fingerprint}")],
        )]
        .into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    fn cert(cn: Option<&str>, orgs: &[&str]) -> Vec<u8> {
        let key = KeyPair::generate().unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        p.distinguished_name = rcgen::DistinguishedName::new();
        if let Some(cn) = cn {
            p.distinguished_name.push(DnType::CommonName, cn);
        }
        for o in orgs {
            p.distinguished_name.push(DnType::OrganizationName, *o);
        }
        p.self_signed(&key).unwrap().der().to_vec()
    }

    #[test]
    fn common_name_is_the_user_and_organizations_the_groups() {
        let der = cert(Some("admin"), &["system:masters"]);
        let u = user_of(&der).expect("a user");
        assert_eq!(u.name, "admin");
        assert_eq!(u.groups, vec!["system:masters", AUTHENTICATED]);
        assert!(u.is_privileged());
        let id = &u.extra["authentication.kubernetes.io/credential-id"][0];
        assert!(id.starts_with("X509SHA256=") && id.len() == 11 + 64, "{id}");
        let plain = user_of(&cert(Some("jane"), &[])).unwrap();
        assert!(!plain.is_privileged());
        assert_eq!(plain.groups, vec![AUTHENTICATED.to_string()]);
    }

    #[test]
    fn no_common_name_authenticates_no_one() {
        assert_eq!(user_of(&cert(None, &["system:masters"])), None);
        assert_eq!(user_of(b"not a certificate"), None);
    }
}
