//! autoscaling/v1 HorizontalPodAutoscalers, stored as autoscaling/v2 (pkg/apis/autoscaling/v1
//! conversion.go): v1's `targetCPUUtilizationPercentage` is v2's CPU utilization metric (80 %
//! when a v1 object names none), `currentCPUUtilizationPercentage` its current value; what v1
//! cannot say travels in annotations (`autoscaling.alpha.kubernetes.io/metrics`,
//! `current-metrics`, `conditions`, `behavior`), read back when a v1 object is written.

use serde_json::{json, Map, Value};

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";
const TOLERANCE_DOWN: &str = "autoscaling.alpha.kubernetes.io/scale-down-tolerance";
const TOLERANCE_UP: &str = "autoscaling.alpha.kubernetes.io/scale-up-tolerance";
/// `autoscaling.DefaultCPUUtilization`.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

const ROUND_TRIP: &[&str] = &[
    METRICS,
    CURRENT_METRICS,
    CONDITIONS,
    BEHAVIOR,
    TOLERANCE_DOWN,
    TOLERANCE_UP,
];

fn annotations(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

fn set_annotations(obj: &mut Value, a: Map<String, Value>) {
    let md = crate::apiserver::meta::metadata_mut(obj);
    if a.is_empty() {
        md.remove("annotations");
    } else {
        md.insert("annotations".into(), Value::Object(a));
    }
}

fn is_cpu_utilization(m: &Value) -> bool {
    m["type"] == "Resource"
        && m.pointer("/resource/name") == Some(&json!("cpu"))
        && m.pointer("/resource/target/averageUtilization")
            .is_some_and(|v| !v.is_null())
}

fn insert_some(m: &mut Map<String, Value>, k: &str, v: Option<&Value>) {
    if let Some(v) = v.filter(|v| !v.is_null()) {
        m.insert(k.into(), v.clone());
    }
}

/// A v2 MetricSpec as v1 writes it in the metrics annotation.
fn metric_spec_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m["type"].clone());
    let target = |src: &Value| src.get("target").cloned().unwrap_or(Value::Null);
    if let Some(o) = m.get("object").filter(|v| v.is_object()) {
        let t = target(o);
        let mut v1 = Map::new();
        v1.insert(
            "target".into(),
            o.get("describedObject").cloned().unwrap_or(json!({})),
        );
        v1.insert(
            "metricName".into(),
            o.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        v1.insert(
            "targetValue".into(),
            t.get("value").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut v1, "selector", o.pointer("/metric/selector"));
        insert_some(&mut v1, "averageValue", t.get("averageValue"));
        out.insert("object".into(), Value::Object(v1));
    }
    if let Some(p) = m.get("pods").filter(|v| v.is_object()) {
        let t = target(p);
        let mut v1 = Map::new();
        v1.insert(
            "metricName".into(),
            p.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        v1.insert(
            "targetAverageValue".into(),
            t.get("averageValue").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut v1, "selector", p.pointer("/metric/selector"));
        out.insert("pods".into(), Value::Object(v1));
    }
    for (k2, k1) in [
        ("resource", "resource"),
        ("containerResource", "containerResource"),
    ] {
        if let Some(r) = m.get(k2).filter(|v| v.is_object()) {
            let t = target(r);
            let mut v1 = Map::new();
            v1.insert("name".into(), r["name"].clone());
            insert_some(
                &mut v1,
                "targetAverageUtilization",
                t.get("averageUtilization"),
            );
            insert_some(&mut v1, "targetAverageValue", t.get("averageValue"));
            insert_some(&mut v1, "container", r.get("container"));
            out.insert(k1.into(), Value::Object(v1));
        }
    }
    if let Some(e) = m.get("external").filter(|v| v.is_object()) {
        let t = target(e);
        let mut v1 = Map::new();
        v1.insert(
            "metricName".into(),
            e.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        insert_some(&mut v1, "metricSelector", e.pointer("/metric/selector"));
        insert_some(&mut v1, "targetValue", t.get("value"));
        insert_some(&mut v1, "targetAverageValue", t.get("averageValue"));
        out.insert("external".into(), Value::Object(v1));
    }
    Value::Object(out)
}

/// A v1 annotation MetricSpec as v2 has it.
fn metric_spec_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m["type"].clone());
    let metric = |name: &Value, selector: Option<&Value>| {
        let mut id = Map::new();
        id.insert("name".into(), name.clone());
        insert_some(&mut id, "selector", selector);
        Value::Object(id)
    };
    if let Some(o) = m.get("object").filter(|v| v.is_object()) {
        let avg = o.get("averageValue").filter(|v| !v.is_null());
        let mut t = Map::new();
        t.insert(
            "type".into(),
            json!(if avg.is_none() {
                "Value"
            } else {
                "AverageValue"
            }),
        );
        t.insert(
            "value".into(),
            o.get("targetValue").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut t, "averageValue", avg);
        out.insert(
            "object".into(),
            json!({"describedObject": o.get("target").cloned().unwrap_or(json!({})),
                   "target": t, "metric": metric(&o["metricName"], o.get("selector"))}),
        );
    }
    if let Some(p) = m.get("pods").filter(|v| v.is_object()) {
        out.insert(
            "pods".into(),
            json!({"metric": metric(&p["metricName"], p.get("selector")),
                   "target": {"type": "AverageValue", "averageValue": p.get("targetAverageValue").cloned().unwrap_or(json!("0"))}}),
        );
    }
    for k in ["resource", "containerResource"] {
        if let Some(r) = m.get(k).filter(|v| v.is_object()) {
            let util = r.get("targetAverageUtilization").filter(|v| !v.is_null());
            let mut t = Map::new();
            t.insert(
                "type".into(),
                json!(if util.is_none() {
                    "AverageValue"
                } else {
                    "Utilization"
                }),
            );
            insert_some(&mut t, "averageValue", r.get("targetAverageValue"));
            insert_some(&mut t, "averageUtilization", util);
            let mut v2 = Map::new();
            v2.insert("name".into(), r["name"].clone());
            v2.insert("target".into(), Value::Object(t));
            insert_some(&mut v2, "container", r.get("container"));
            out.insert(k.into(), Value::Object(v2));
        }
    }
    if let Some(e) = m.get("external").filter(|v| v.is_object()) {
        let value = e.get("targetValue").filter(|v| !v.is_null());
        let mut t = Map::new();
        t.insert(
            "type".into(),
            json!(if value.is_none() {
                "AverageValue"
            } else {
                "Value"
            }),
        );
        insert_some(&mut t, "value", value);
        insert_some(&mut t, "averageValue", e.get("targetAverageValue"));
        out.insert(
            "external".into(),
            json!({"metric": metric(&e["metricName"], e.get("metricSelector")), "target": t}),
        );
    }
    Value::Object(out)
}

/// A v2 MetricStatus as v1 writes it in the current-metrics annotation.
fn metric_status_to_v1(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m["type"].clone());
    let current = |src: &Value| src.get("current").cloned().unwrap_or(Value::Null);
    for k in ["resource", "containerResource"] {
        if let Some(r) = m.get(k).filter(|v| v.is_object()) {
            let c = current(r);
            let mut v1 = Map::new();
            v1.insert("name".into(), r["name"].clone());
            insert_some(
                &mut v1,
                "currentAverageUtilization",
                c.get("averageUtilization"),
            );
            v1.insert(
                "currentAverageValue".into(),
                c.get("averageValue").cloned().unwrap_or(json!("0")),
            );
            insert_some(&mut v1, "container", r.get("container"));
            out.insert(k.into(), Value::Object(v1));
        }
    }
    if let Some(p) = m.get("pods").filter(|v| v.is_object()) {
        let c = current(p);
        let mut v1 = Map::new();
        v1.insert(
            "metricName".into(),
            p.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        v1.insert(
            "currentAverageValue".into(),
            c.get("averageValue").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut v1, "selector", p.pointer("/metric/selector"));
        out.insert("pods".into(), Value::Object(v1));
    }
    if let Some(o) = m.get("object").filter(|v| v.is_object()) {
        let c = current(o);
        let mut v1 = Map::new();
        v1.insert(
            "target".into(),
            o.get("describedObject").cloned().unwrap_or(json!({})),
        );
        v1.insert(
            "metricName".into(),
            o.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        v1.insert(
            "currentValue".into(),
            c.get("value").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut v1, "selector", o.pointer("/metric/selector"));
        insert_some(&mut v1, "averageValue", c.get("averageValue"));
        out.insert("object".into(), Value::Object(v1));
    }
    if let Some(e) = m.get("external").filter(|v| v.is_object()) {
        let c = current(e);
        let mut v1 = Map::new();
        v1.insert(
            "metricName".into(),
            e.pointer("/metric/name").cloned().unwrap_or(json!("")),
        );
        insert_some(&mut v1, "metricSelector", e.pointer("/metric/selector"));
        v1.insert(
            "currentValue".into(),
            c.get("value").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut v1, "currentAverageValue", c.get("averageValue"));
        out.insert("external".into(), Value::Object(v1));
    }
    Value::Object(out)
}

/// A v1 annotation MetricStatus as v2 has it.
fn metric_status_to_v2(m: &Value) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), m["type"].clone());
    let metric = |name: &Value, selector: Option<&Value>| {
        let mut id = Map::new();
        id.insert("name".into(), name.clone());
        insert_some(&mut id, "selector", selector);
        Value::Object(id)
    };
    for k in ["resource", "containerResource"] {
        if let Some(r) = m.get(k).filter(|v| v.is_object()) {
            let mut c = Map::new();
            insert_some(&mut c, "averageValue", r.get("currentAverageValue"));
            insert_some(
                &mut c,
                "averageUtilization",
                r.get("currentAverageUtilization"),
            );
            let mut v2 = Map::new();
            v2.insert("name".into(), r["name"].clone());
            v2.insert("current".into(), Value::Object(c));
            insert_some(&mut v2, "container", r.get("container"));
            out.insert(k.into(), Value::Object(v2));
        }
    }
    if let Some(p) = m.get("pods").filter(|v| v.is_object()) {
        out.insert(
            "pods".into(),
            json!({"metric": metric(&p["metricName"], p.get("selector")),
                   "current": {"averageValue": p.get("currentAverageValue").cloned().unwrap_or(json!("0"))}}),
        );
    }
    if let Some(o) = m.get("object").filter(|v| v.is_object()) {
        let mut c = Map::new();
        c.insert(
            "value".into(),
            o.get("currentValue").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut c, "averageValue", o.get("averageValue"));
        out.insert(
            "object".into(),
            json!({"describedObject": o.get("target").cloned().unwrap_or(json!({})),
                   "metric": metric(&o["metricName"], o.get("selector")), "current": c}),
        );
    }
    if let Some(e) = m.get("external").filter(|v| v.is_object()) {
        let mut c = Map::new();
        c.insert(
            "value".into(),
            e.get("currentValue").cloned().unwrap_or(json!("0")),
        );
        insert_some(&mut c, "averageValue", e.get("currentAverageValue"));
        out.insert(
            "external".into(),
            json!({"metric": metric(&e["metricName"], e.get("metricSelector")), "current": c}),
        );
    }
    Value::Object(out)
}

/// The behavior as the internal Go type marshals it (no JSON tags: Go field names).
fn behavior_to_internal(b: &Value) -> Value {
    let rules = |r: &Value| -> Value {
        if r.is_null() {
            return Value::Null;
        }
        let policies: Vec<Value> = r
            .get("policies")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|p| json!({"Type": p["type"], "Value": p["value"], "PeriodSeconds": p["periodSeconds"]}))
            .collect();
        json!({
            "StabilizationWindowSeconds": r.get("stabilizationWindowSeconds").cloned().unwrap_or(Value::Null),
            "SelectPolicy": r.get("selectPolicy").cloned().unwrap_or(Value::Null),
            "Policies": if r.get("policies").is_some_and(|p| !p.is_null()) { Value::Array(policies) } else { Value::Null },
            "Tolerance": r.get("tolerance").cloned().unwrap_or(Value::Null),
        })
    };
    json!({
        "ScaleUp": rules(b.get("scaleUp").unwrap_or(&Value::Null)),
        "ScaleDown": rules(b.get("scaleDown").unwrap_or(&Value::Null)),
    })
}

fn behavior_from_internal(b: &Value) -> Option<Value> {
    let rules = |r: &Value| -> Option<Value> {
        if r.is_null() {
            return None;
        }
        let mut out = Map::new();
        insert_some(
            &mut out,
            "stabilizationWindowSeconds",
            r.get("StabilizationWindowSeconds"),
        );
        insert_some(&mut out, "selectPolicy", r.get("SelectPolicy"));
        if let Some(p) = r.get("Policies").and_then(Value::as_array) {
            out.insert(
                "policies".into(),
                Value::Array(
                    p.iter()
                        .map(|p| json!({"type": p["Type"], "value": p["Value"], "periodSeconds": p["PeriodSeconds"]}))
                        .collect(),
                ),
            );
        }
        insert_some(&mut out, "tolerance", r.get("Tolerance"));
        Some(Value::Object(out))
    };
    let up = rules(b.get("ScaleUp").unwrap_or(&Value::Null));
    let down = rules(b.get("ScaleDown").unwrap_or(&Value::Null));
    if up.is_none() && down.is_none() {
        return None;
    }
    let mut out = Map::new();
    if let Some(u) = up {
        out.insert("scaleUp".into(), u);
    }
    if let Some(d) = down {
        out.insert("scaleDown".into(), d);
    }
    Some(Value::Object(out))
}

/// A stored (autoscaling/v2) HorizontalPodAutoscaler as autoscaling/v1 serves it.
pub fn v2_to_v1(obj: &Value) -> Value {
    let mut out = Map::new();
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    out.insert("apiVersion".into(), json!("autoscaling/v1"));
    out.insert(
        "metadata".into(),
        obj.get("metadata").cloned().unwrap_or(json!({})),
    );
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let status = obj.get("status").cloned().unwrap_or(json!({}));
    let metrics: Vec<Value> = spec
        .get("metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut v1spec = Map::new();
    v1spec.insert(
        "scaleTargetRef".into(),
        spec.get("scaleTargetRef").cloned().unwrap_or(json!({})),
    );
    insert_some(&mut v1spec, "minReplicas", spec.get("minReplicas"));
    v1spec.insert(
        "maxReplicas".into(),
        spec.get("maxReplicas").cloned().unwrap_or(json!(0)),
    );
    if let Some(cpu) = metrics.iter().find(|m| is_cpu_utilization(m)) {
        v1spec.insert(
            "targetCPUUtilizationPercentage".into(),
            cpu.pointer("/resource/target/averageUtilization")
                .cloned()
                .unwrap_or(Value::Null),
        );
    }
    out.insert("spec".into(), Value::Object(v1spec));
    let mut v1status = Map::new();
    insert_some(
        &mut v1status,
        "observedGeneration",
        status.get("observedGeneration"),
    );
    insert_some(&mut v1status, "lastScaleTime", status.get("lastScaleTime"));
    v1status.insert(
        "currentReplicas".into(),
        status.get("currentReplicas").cloned().unwrap_or(json!(0)),
    );
    v1status.insert(
        "desiredReplicas".into(),
        status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
    );
    let current: Vec<Value> = status
        .get("currentMetrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for m in &current {
        if m["type"] == "Resource" && m.pointer("/resource/name") == Some(&json!("cpu")) {
            if let Some(u) = m
                .pointer("/resource/current/averageUtilization")
                .filter(|v| !v.is_null())
            {
                v1status.insert("currentCPUUtilizationPercentage".into(), u.clone());
            }
        }
    }
    out.insert("status".into(), Value::Object(v1status));
    let mut o = Value::Object(out);
    let mut a = annotations(&o);
    for k in ROUND_TRIP {
        a.shift_remove(*k);
    }
    let other: Vec<Value> = metrics
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(metric_spec_to_v1)
        .collect();
    if !other.is_empty() {
        a.insert(METRICS.into(), json!(Value::Array(other).to_string()));
    }
    if !current.is_empty() {
        let v1: Vec<Value> = current.iter().map(metric_status_to_v1).collect();
        a.insert(CURRENT_METRICS.into(), json!(Value::Array(v1).to_string()));
    }
    if let Some(b) = spec.get("behavior").filter(|b| !b.is_null()) {
        a.insert(BEHAVIOR.into(), json!(behavior_to_internal(b).to_string()));
    }
    if let Some(c) = status
        .get("conditions")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
    {
        a.insert(
            CONDITIONS.into(),
            json!(Value::Array(c.clone()).to_string()),
        );
    }
    set_annotations(&mut o, a);
    o
}

/// An autoscaling/v1 HorizontalPodAutoscaler as it is stored (autoscaling/v2).
pub fn v1_to_v2(obj: &Value) -> Value {
    let a = annotations(obj);
    let spec = obj.get("spec").cloned().unwrap_or(json!({}));
    let status = obj.get("status").cloned().unwrap_or(json!({}));
    let parse = |k: &str| -> Option<Vec<Value>> {
        a.get(k)
            .and_then(Value::as_str)
            .and_then(|s| serde_json::from_str::<Vec<Value>>(s).ok())
    };
    let mut metrics: Vec<Value> = Vec::new();
    if let Some(cpu) = spec
        .get("targetCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": cpu}}}));
    }
    if let Some(other) = parse(METRICS) {
        let mut all: Vec<Value> = other.iter().map(metric_spec_to_v2).collect();
        all.extend(metrics.into_iter().take(1));
        metrics = all;
    }
    if metrics.is_empty() {
        metrics.push(json!({"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}));
    }
    let mut v2spec = Map::new();
    v2spec.insert(
        "scaleTargetRef".into(),
        spec.get("scaleTargetRef").cloned().unwrap_or(json!({})),
    );
    insert_some(&mut v2spec, "minReplicas", spec.get("minReplicas"));
    v2spec.insert(
        "maxReplicas".into(),
        spec.get("maxReplicas").cloned().unwrap_or(json!(0)),
    );
    v2spec.insert("metrics".into(), Value::Array(metrics));
    if let Some(b) = a
        .get(BEHAVIOR)
        .and_then(Value::as_str)
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
        .and_then(|b| behavior_from_internal(&b))
    {
        v2spec.insert("behavior".into(), b);
    }
    let mut v2status = Map::new();
    insert_some(
        &mut v2status,
        "observedGeneration",
        status.get("observedGeneration"),
    );
    insert_some(&mut v2status, "lastScaleTime", status.get("lastScaleTime"));
    insert_some(
        &mut v2status,
        "currentReplicas",
        status.get("currentReplicas"),
    );
    v2status.insert(
        "desiredReplicas".into(),
        status.get("desiredReplicas").cloned().unwrap_or(json!(0)),
    );
    let mut current: Vec<Value> = Vec::new();
    if let Some(u) = status
        .get("currentCPUUtilizationPercentage")
        .filter(|v| !v.is_null())
    {
        current.push(json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": u}}}));
    }
    if let Some(c) = parse(CURRENT_METRICS) {
        current = c.iter().map(metric_status_to_v2).collect();
    }
    v2status.insert(
        "currentMetrics".into(),
        if current.is_empty() {
            Value::Null
        } else {
            Value::Array(current)
        },
    );
    if let Some(c) = parse(CONDITIONS) {
        v2status.insert("conditions".into(), Value::Array(c));
    }
    let mut out = Map::new();
    out.insert("kind".into(), json!("HorizontalPodAutoscaler"));
    out.insert("apiVersion".into(), json!("autoscaling/v2"));
    out.insert(
        "metadata".into(),
        obj.get("metadata").cloned().unwrap_or(json!({})),
    );
    out.insert("spec".into(), Value::Object(v2spec));
    out.insert("status".into(), Value::Object(v2status));
    let mut o = Value::Object(out);
    let mut rest = a;
    for k in ROUND_TRIP {
        rest.shift_remove(*k);
    }
    set_annotations(&mut o, rest);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_objects_round_trip_through_v2() {
        // What kube-apiserver 1.35 stores and serves for a v1 HPA with a CPU target.
        let v1 = json!({"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h1"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}, "minReplicas": 1, "maxReplicas": 3, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 0, "desiredReplicas": 0}});
        let v2 = v1_to_v2(&v1);
        assert_eq!(
            v2["spec"]["metrics"],
            json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}])
        );
        assert_eq!(v2["status"]["currentMetrics"], Value::Null);
        let back = v2_to_v1(&v2);
        assert_eq!(back["spec"], v1["spec"]);
        assert_eq!(back["status"], v1["status"]);
        assert!(back["metadata"].get("annotations").is_none());
        // no target: v2 gets the default CPU target, and v1 reads it back
        let mut bare = v1.clone();
        bare["spec"]
            .as_object_mut()
            .unwrap()
            .remove("targetCPUUtilizationPercentage");
        assert_eq!(
            v2_to_v1(&v1_to_v2(&bare))["spec"]["targetCPUUtilizationPercentage"],
            80
        );
    }

    #[test]
    fn what_v1_cannot_say_goes_to_annotations() {
        let v2 = json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 1, "maxReplicas": 3,
                     "metrics": [{"type": "Pods", "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}}}]},
            "status": {"desiredReplicas": 1}});
        let v1 = v2_to_v1(&v2);
        assert_eq!(
            v1["metadata"]["annotations"][METRICS],
            r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"10"}}]"#
        );
        assert!(v1["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert_eq!(v1_to_v2(&v1)["spec"]["metrics"], v2["spec"]["metrics"]);
    }
}
