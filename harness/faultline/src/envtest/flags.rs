//! The command lines envtest gives `kube-apiserver` and `etcd`
//! (sigs.k8s.io/controller-runtime pkg/internal/testing/controlplane/{apiserver,etcd,auth}.go),
//! read as pflag reads them (`--name=value`, `--name value`, a bare `--bool`), into what the
//! simulated API server does with them. A flag whose effect the sim does not have is an error
//! naming it, so a suite that asks for something the drop-in lacks fails at once instead of
//! running against different semantics.

use faultline_sim::apiserver::service_allocation::ServiceCidr;
use faultline_sim::tls::TlsFiles;
use std::net::IpAddr;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum FlagError {
    #[error("flag --{0} is not supported by faultline's simulated kube-apiserver")]
    Unsupported(String),
    #[error("--{flag}={value} is not supported by faultline's simulated kube-apiserver: {why}")]
    UnsupportedValue {
        flag: String,
        value: String,
        why: String,
    },
    #[error("invalid argument {value:?} for \"--{flag}\" flag: {why}")]
    Invalid {
        flag: String,
        value: String,
        why: String,
    },
    #[error("flag needs an argument: --{0}")]
    MissingValue(String),
    #[error("unexpected argument {0:?} (kube-apiserver takes flags only)")]
    Positional(String),
}

/// What one flag takes.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Bool,
    Value,
}

/// One flag as given.
#[derive(Debug, Clone, PartialEq)]
struct Flag {
    name: String,
    value: String,
}

/// Split `args` into flags, given each known flag's kind (unknown ones take a value when one
/// follows, so their error names them and not their value).
fn split(args: &[String], kind: impl Fn(&str) -> Option<Kind>) -> Result<Vec<Flag>, FlagError> {
    let mut out = vec![];
    let mut it = args.iter().peekable();
    while let Some(a) = it.next() {
        let Some(body) = a.strip_prefix("--").or_else(|| a.strip_prefix('-')) else {
            return Err(FlagError::Positional(a.clone()));
        };
        let (name, value) = match body.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (body.to_string(), None),
        };
        let value = match (value, kind(&name)) {
            (Some(v), _) => v,
            (None, Some(Kind::Bool)) => "true".into(),
            (None, _) => match it.peek() {
                Some(next) if !next.starts_with('-') => it.next().cloned().unwrap_or_default(),
                _ if kind(&name).is_none() => String::new(),
                _ => return Err(FlagError::MissingValue(name)),
            },
        };
        out.push(Flag { name, value });
    }
    Ok(out)
}

fn parse_bool(f: &Flag) -> Result<bool, FlagError> {
    match f.value.as_str() {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Ok(false),
        _ => Err(invalid(f, "strconv.ParseBool: parsing: invalid syntax")),
    }
}

fn invalid(f: &Flag, why: &str) -> FlagError {
    FlagError::Invalid {
        flag: f.name.clone(),
        value: f.value.clone(),
        why: why.into(),
    }
}

fn list(f: &Flag) -> Vec<String> {
    f.value
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect()
}

/// The help text envtest reads (`kube-apiserver --help`) to discover flags: it passes
/// `--insecure-port` only when listed, and 1.35 has none.
pub const APISERVER_HELP: &str = "faultline's simulated kube-apiserver (an envtest drop-in, `faultline envtest-assets`)

Flags the simulated API server honours (any other flag is an error naming it):
      --advertise-address ip                   accepted; no effect
      --allow-privileged                       must be true (the sim does not refuse privileged pods)
      --anonymous-auth                         requests without credentials are system:anonymous (default true)
      --authorization-mode strings             RBAC only (default [RBAC]); system:masters bypasses it
      --bind-address ip                        a loopback address (default 127.0.0.1)
      --cert-dir string                        apiserver.crt and apiserver.key, unless --tls-cert-file is set (default \"/var/run/kubernetes\")
      --client-ca-file string                  client certificates chaining to it authenticate: CN is the user, O the groups
      --disable-admission-plugins strings      ServiceAccount, or plugins the sim does not implement
      --enable-admission-plugins strings       plugins kube-apiserver enables by default
      --etcd-servers strings                   accepted; the state lives in the sim's memory
      --secure-port int                        the HTTPS port (default 6443)
      --service-account-issuer stringArray     the iss claim of ServiceAccount tokens (the first one)
      --service-account-key-file stringArray   accepted; the sim verifies the tokens it signs
      --service-account-signing-key-file string  accepted; the sim signs with a key of its own
      --service-cluster-ip-range string        IPv4 CIDR Service cluster IPs come from (default 10.0.0.0/24)
      --tls-cert-file string                   serving certificate (PEM)
      --tls-private-key-file string            its key (PEM)
  -v, --v Level                                accepted; no effect
      --vmodule pattern                        accepted; no effect

Environment (opt-in extras envtest does not have):
  FAULTLINE_ENVTEST_CONTROLLERS=1   the kube-controller-manager loops (garbage collector,
                                    namespaces, ServiceAccounts, Deployments, ...)
  FAULTLINE_ENVTEST_NODES=N         N simulated worker nodes with kubelets, the scheduler, CSI and
                                    storage, Ready before the API answers (implies the controllers)
  FAULTLINE_ENVTEST_TIME_SCALE=F    the simulated cluster's durations times F (needs nodes)
  FAULTLINE_ENVTEST_FAULTS=1        the fault endpoints (/faultline/v1/...) for the cluster admin
";

/// What the simulated kube-apiserver takes from its command line.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiServerFlags {
    pub bind: std::net::SocketAddr,
    pub tls: TlsFiles,
    pub service_cidr: ServiceCidr,
    pub service_account_admission: bool,
    pub service_account_issuer: Option<String>,
    pub anonymous_auth: bool,
}

/// Admission plugins the sim implements and cannot turn off.
const ALWAYS_ON_PLUGINS: &[&str] = &[
    "NamespaceLifecycle",
    "Priority",
    "DefaultTolerationSeconds",
    "StorageObjectInUseProtection",
];

/// kube-apiserver 1.35's default-enabled admission plugins the sim does not implement: turning
/// one off changes nothing here, and enabling it explicitly asks for what it already has.
const DEFAULT_PLUGINS_NOT_SIMULATED: &[&str] = &[
    "LimitRanger",
    "TaintNodesByCondition",
    "PodSecurity",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
];

fn apiserver_kind(name: &str) -> Option<Kind> {
    Some(match name {
        "allow-privileged" | "anonymous-auth" | "help" | "h" => Kind::Bool,
        "advertise-address"
        | "authorization-mode"
        | "bind-address"
        | "cert-dir"
        | "client-ca-file"
        | "disable-admission-plugins"
        | "enable-admission-plugins"
        | "etcd-servers"
        | "secure-port"
        | "service-account-issuer"
        | "service-account-key-file"
        | "service-account-signing-key-file"
        | "service-cluster-ip-range"
        | "tls-cert-file"
        | "tls-private-key-file"
        | "v"
        | "vmodule" => Kind::Value,
        _ => return None,
    })
}

/// `Ok(None)`: `--help` was asked for.
pub fn parse_apiserver(args: &[String]) -> Result<Option<ApiServerFlags>, FlagError> {
    let flags = split(args, apiserver_kind)?;
    if flags.iter().any(|f| f.name == "help" || f.name == "h") {
        return Ok(None);
    }
    let mut port: u16 = 6443;
    let mut ip: IpAddr = [127, 0, 0, 1].into();
    let mut cert_dir = PathBuf::from("/var/run/kubernetes");
    let (mut cert, mut key, mut client_ca) = (None, None, None);
    // kube-apiserver's own default (envtest passes 10.0.0.0/24 too).
    let mut service_cidr = ServiceCidr::parse("10.0.0.0/24").expect("a valid CIDR");
    let mut sa_admission = true;
    let mut issuer = None;
    let mut anonymous = true;
    for f in &flags {
        match f.name.as_str() {
            "advertise-address" => {
                f.value
                    .parse::<IpAddr>()
                    .map_err(|_| invalid(f, "not an IP address"))?;
            }
            "allow-privileged" => {
                if !parse_bool(f)? {
                    return Err(FlagError::UnsupportedValue {
                        flag: f.name.clone(),
                        value: f.value.clone(),
                        why: "the simulated API server does not refuse privileged containers"
                            .into(),
                    });
                }
            }
            "anonymous-auth" => anonymous = parse_bool(f)?,
            "authorization-mode" => {
                for mode in list(f) {
                    if mode != "RBAC" {
                        return Err(FlagError::UnsupportedValue {
                            flag: f.name.clone(),
                            value: f.value.clone(),
                            why: format!(
                                "the {mode} authorizer is not simulated (RBAC is, with system:masters allowed everything)"
                            ),
                        });
                    }
                }
            }
            "bind-address" => {
                ip = f
                    .value
                    .parse::<IpAddr>()
                    .map_err(|_| invalid(f, "not an IP address"))?;
                if !ip.is_loopback() {
                    return Err(FlagError::UnsupportedValue {
                        flag: f.name.clone(),
                        value: f.value.clone(),
                        why: "the simulated API server binds loopback addresses only".into(),
                    });
                }
            }
            "cert-dir" => cert_dir = PathBuf::from(&f.value),
            "client-ca-file" => client_ca = Some(PathBuf::from(&f.value)),
            "disable-admission-plugins" => {
                for p in list(f) {
                    if p == "ServiceAccount" {
                        sa_admission = false;
                    } else if ALWAYS_ON_PLUGINS.contains(&p.as_str()) {
                        return Err(FlagError::UnsupportedValue {
                            flag: f.name.clone(),
                            value: f.value.clone(),
                            why: format!("the sim's {p} admission cannot be turned off"),
                        });
                    } else if !DEFAULT_PLUGINS_NOT_SIMULATED.contains(&p.as_str()) {
                        return Err(unknown_plugin(f, &p));
                    }
                }
            }
            "enable-admission-plugins" => {
                for p in list(f) {
                    let known = p == "ServiceAccount"
                        || ALWAYS_ON_PLUGINS.contains(&p.as_str())
                        || DEFAULT_PLUGINS_NOT_SIMULATED.contains(&p.as_str());
                    if !known {
                        return Err(unknown_plugin(f, &p));
                    }
                }
            }
            "etcd-servers"
            | "service-account-key-file"
            | "service-account-signing-key-file"
            | "v"
            | "vmodule" => {}
            "secure-port" => {
                port = f
                    .value
                    .parse::<u16>()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| invalid(f, "must be a port between 1 and 65535"))?;
            }
            "service-account-issuer" => {
                // Repeatable: the first issues, the others are only accepted (rotation).
                issuer.get_or_insert_with(|| f.value.clone());
            }
            "service-cluster-ip-range" => {
                service_cidr = ServiceCidr::parse(&f.value).map_err(|why| invalid(f, &why))?
            }
            "tls-cert-file" => cert = Some(PathBuf::from(&f.value)),
            "tls-private-key-file" => key = Some(PathBuf::from(&f.value)),
            other => return Err(FlagError::Unsupported(other.to_string())),
        }
    }
    // kube-apiserver reads <cert-dir>/apiserver.{crt,key} when no files are named.
    let tls = TlsFiles {
        cert: cert.unwrap_or_else(|| cert_dir.join("apiserver.crt")),
        key: key.unwrap_or_else(|| cert_dir.join("apiserver.key")),
        client_ca,
    };
    Ok(Some(ApiServerFlags {
        bind: std::net::SocketAddr::new(ip, port),
        tls,
        service_cidr,
        service_account_admission: sa_admission,
        service_account_issuer: issuer,
        anonymous_auth: anonymous,
    }))
}

fn unknown_plugin(f: &Flag, plugin: &str) -> FlagError {
    FlagError::UnsupportedValue {
        flag: f.name.clone(),
        value: f.value.clone(),
        why: format!("admission plugin {plugin:?} is not simulated"),
    }
}

/// `etcd --help` as envtest reads it: without `--unsafe-no-fsync`, which it then does not pass.
pub const ETCD_HELP: &str =
    "faultline's etcd stand-in for envtest: serves /health on --listen-client-urls;
the simulated kube-apiserver keeps its state in memory.

      --listen-client-urls string     http URLs on loopback to serve /health on
      --advertise-client-urls string  accepted
      --listen-peer-urls string       accepted
      --data-dir string               accepted
";

/// The loopback `host:port`s the etcd stand-in listens on; `Ok(None)`: `--help`.
pub fn parse_etcd(args: &[String]) -> Result<Option<Vec<std::net::SocketAddr>>, FlagError> {
    let flags = split(args, |n| {
        Some(if n == "help" || n == "h" {
            Kind::Bool
        } else {
            Kind::Value
        })
    })?;
    if flags.iter().any(|f| f.name == "help" || f.name == "h") {
        return Ok(None);
    }
    let mut addrs = vec![];
    // etcd's other flags change nothing the API server's clients can see.
    for f in flags.iter().filter(|f| f.name == "listen-client-urls") {
        for url in list(f) {
            let host_port = url
                .strip_prefix("http://")
                .ok_or_else(|| invalid(f, "only http:// URLs are served"))?
                .trim_end_matches('/');
            let addr: std::net::SocketAddr = host_port
                .replace("localhost", "127.0.0.1")
                .parse()
                .map_err(|_| invalid(f, "expected http://<loopback IP>:<port>"))?;
            if !addr.ip().is_loopback() {
                return Err(invalid(f, "the stand-in listens on loopback only"));
            }
            addrs.push(addr);
        }
    }
    if addrs.is_empty() {
        return Err(FlagError::MissingValue("listen-client-urls".into()));
    }
    Ok(Some(addrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    /// The command line controller-runtime v0.23's envtest builds (APIServer.defaultArgs plus
    /// CertAuthn.Configure), rendered as process.TemplateAndArguments renders it.
    fn envtest_args(dir: &str) -> Vec<String> {
        args(&[
            "--advertise-address=127.0.0.1",
            "--allow-privileged=true",
            "--authorization-mode=RBAC",
            "--bind-address=127.0.0.1",
            &format!("--cert-dir={dir}"),
            &format!("--client-ca-file={dir}/client-cert-auth-ca.crt"),
            "--disable-admission-plugins=ServiceAccount",
            "--etcd-servers=http://127.0.0.1:41235",
            "--secure-port=41237",
            "--service-account-issuer=https://127.0.0.1:41237/",
            &format!("--service-account-key-file={dir}/sa-signer.crt"),
            &format!("--service-account-signing-key-file={dir}/sa-signer.key"),
            "--service-cluster-ip-range=10.0.0.0/24",
        ])
    }

    #[test]
    fn envtest_command_line_is_understood() {
        let f = parse_apiserver(&envtest_args("/tmp/k8s_test_framework_1"))
            .unwrap()
            .unwrap();
        assert_eq!(f.bind, "127.0.0.1:41237".parse().unwrap());
        assert_eq!(
            f.tls,
            TlsFiles {
                cert: "/tmp/k8s_test_framework_1/apiserver.crt".into(),
                key: "/tmp/k8s_test_framework_1/apiserver.key".into(),
                client_ca: Some("/tmp/k8s_test_framework_1/client-cert-auth-ca.crt".into()),
            }
        );
        assert_eq!(f.service_cidr.first().to_string(), "10.0.0.1");
        assert!(!f.service_account_admission);
        assert!(f.anonymous_auth);
        assert_eq!(
            f.service_account_issuer.as_deref(),
            Some("https://127.0.0.1:41237/")
        );
    }

    #[test]
    fn space_separated_values_and_help() {
        let f = parse_apiserver(&args(&["--secure-port", "7000", "--anonymous-auth=false"]))
            .unwrap()
            .unwrap();
        assert_eq!(f.bind.port(), 7000);
        assert!(!f.anonymous_auth);
        assert_eq!(parse_apiserver(&args(&["--help"])).unwrap(), None);
        assert!(!APISERVER_HELP.contains("--insecure-port"));
        assert!(!ETCD_HELP.contains("unsafe-no-fsync"));
    }

    #[test]
    fn unsupported_flags_are_named() {
        for (a, names) in [
            (
                "--feature-gates=AggregatedDiscoveryEndpoint=false",
                "--feature-gates",
            ),
            ("--authorization-mode=Node,RBAC", "Node authorizer"),
            ("--bind-address=0.0.0.0", "loopback"),
            ("--disable-admission-plugins=Priority", "Priority"),
            (
                "--enable-admission-plugins=AlwaysPullImages",
                "AlwaysPullImages",
            ),
            ("--allow-privileged=false", "privileged"),
            ("--insecure-port=0", "--insecure-port"),
        ] {
            let e = parse_apiserver(&args(&[a])).unwrap_err().to_string();
            assert!(e.contains(names), "{a}: {e}");
        }
        assert_eq!(
            parse_apiserver(&args(&["--secure-port=0"]))
                .unwrap_err()
                .to_string(),
            "invalid argument \"0\" for \"--secure-port\" flag: must be a port between 1 and 65535"
        );
        assert_eq!(
            parse_apiserver(&args(&["--cert-dir"])).unwrap_err(),
            FlagError::MissingValue("cert-dir".into())
        );
        assert!(matches!(
            parse_apiserver(&args(&["stray"])).unwrap_err(),
            FlagError::Positional(_)
        ));
    }

    #[test]
    fn etcd_listens_where_envtest_polls() {
        let a = parse_etcd(&args(&[
            "--advertise-client-urls=http://127.0.0.1:41235",
            "--data-dir=/tmp/d",
            "--listen-client-urls=http://127.0.0.1:41235",
            "--listen-peer-urls=http://127.0.0.1:41236",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(a, vec!["127.0.0.1:41235".parse().unwrap()]);
        assert!(parse_etcd(&args(&["--listen-client-urls=https://127.0.0.1:1"])).is_err());
        assert!(parse_etcd(&args(&["--listen-client-urls=http://10.1.2.3:1"])).is_err());
        assert_eq!(parse_etcd(&args(&["-h"])).unwrap(), None);
    }
}
