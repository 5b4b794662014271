//! Server-side printing of the kinds the data-driven printers added, as kubectl 1.37 renders the
//! Tables: the headers and cells a 1.35 cluster shows for the same manifests.

mod common;

use common::tools::kubectl_ok;
use common::TestCluster;

const MANIFESTS: &str = r#"
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: default}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: backup, image: busybox:1.36}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: web, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: web}}}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: deny-all, namespace: default}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: viewers}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
- {kind: Group, name: devs, apiGroup: rbac.authorization.k8s.io}
- {kind: ServiceAccount, name: ci, namespace: default}
"#;

fn table(out: &str) -> Vec<Vec<String>> {
    // Columns are separated by at least two spaces (headers themselves contain single spaces).
    out.lines()
        .map(|l| {
            l.split("  ")
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_prints_the_new_kinds_like_a_real_cluster() {
    let c = TestCluster::start(0).await;
    let kc = &c.kubeconfig;
    let file = c.dir.path().join("kinds.yaml");
    std::fs::write(&file, MANIFESTS).unwrap();
    kubectl_ok(kc, &["apply", "-f", file.to_str().unwrap()]).await;

    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (
            &["get", "cronjobs"],
            &[
                "NAME",
                "SCHEDULE",
                "TIMEZONE",
                "SUSPEND",
                "ACTIVE",
                "LAST SCHEDULE",
                "AGE",
            ],
            &["nightly", "0 3 * * *", "<none>", "False", "0", "<none>"],
        ),
        (
            &["get", "pdb"],
            &[
                "NAME",
                "MIN AVAILABLE",
                "MAX UNAVAILABLE",
                "ALLOWED DISRUPTIONS",
                "AGE",
            ],
            &["web", "1", "N/A", "0"],
        ),
        (
            &["get", "priorityclass", "high"],
            &["NAME", "VALUE", "GLOBAL-DEFAULT", "AGE", "PREEMPTIONPOLICY"],
            &["high", "1000", "false"],
        ),
        (
            &["get", "ingressclass"],
            &["NAME", "CONTROLLER", "PARAMETERS", "AGE"],
            &["nginx", "k8s.io/ingress-nginx", "<none>"],
        ),
        (
            &["get", "networkpolicy"],
            &["NAME", "POD-SELECTOR", "AGE"],
            &["deny-all", "<none>"],
        ),
        (
            &["get", "clusterrolebinding", "viewers", "-o", "wide"],
            &["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"],
            &["viewers", "ClusterRole/view"],
        ),
    ];
    for (args, header, first_cells) in cases {
        let out = kubectl_ok(kc, args).await;
        let rows = table(&out);
        assert_eq!(rows[0], *header, "kubectl {args:?}:\n{out}");
        assert!(
            rows[1].len() >= first_cells.len() && rows[1][..first_cells.len()] == **first_cells,
            "kubectl {args:?}:\n{out}"
        );
    }
    let crb = kubectl_ok(kc, &["get", "clusterrolebinding", "viewers", "-o", "wide"]).await;
    // USERS is empty; GROUPS and SERVICEACCOUNTS follow.
    assert_eq!(table(&crb)[1][3..], ["devs", "default/ci"], "{crb}");
}
