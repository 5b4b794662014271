//! A scenario's steps as the runner runs them: each model `Step` (one struct with one kind set)
//! becomes, once, a `PlannedStep` holding a typed `Step` - one variant per kind, matched
//! exhaustively wherever a step is run or described, never dispatched on a kind's name.

use super::error::RunError;
use crate::model::{self, DeleteStep, Dur, Expect, Fault, Manifests, Operation, PatchStep, Script};
use crate::report::StepKind;

/// What a step does.
#[derive(Clone, Debug)]
pub enum Step {
    Apply(Manifests),
    Create(Manifests),
    Patch(PatchStep),
    Delete(DeleteStep),
    Fault(Fault),
    Remediate(Operation),
    Sleep(Dur),
    /// Boxed: an expectation is several times the size of any other step.
    Expect(Box<Expect>),
    Script(Script),
    /// `try`, with its `catch` and `finally` steps.
    Try {
        steps: Vec<PlannedStep>,
        catch: Option<Vec<PlannedStep>>,
        finally: Option<Vec<PlannedStep>>,
    },
}

/// A step with its name (anchors, `heal: {atStep}`, reports) and its own deadline.
#[derive(Clone, Debug)]
pub struct PlannedStep {
    pub name: String,
    pub timeout: Option<Dur>,
    pub step: Step,
}

impl Step {
    pub fn kind(&self) -> StepKind {
        match self {
            Step::Apply(_) => StepKind::Apply,
            Step::Create(_) => StepKind::Create,
            Step::Patch(_) => StepKind::Patch,
            Step::Delete(_) => StepKind::Delete,
            Step::Fault(_) => StepKind::Fault,
            Step::Remediate(_) => StepKind::Remediate,
            Step::Sleep(_) => StepKind::Sleep,
            Step::Expect(_) => StepKind::Expect,
            Step::Script(_) => StepKind::Script,
            Step::Try { .. } => StepKind::Try,
        }
    }

    /// What the timeline adds after `step <name> (<kind>)`: the file or object count of a
    /// manifest step, a sleep's duration.
    pub fn detail(&self) -> String {
        match self {
            Step::Apply(m) | Step::Create(m) => m
                .file
                .as_ref()
                .map(|f| format!(": {f}"))
                .unwrap_or_else(|| format!(": {} object(s)", m.objects.len())),
            Step::Sleep(d) => format!(": {d}"),
            Step::Patch(_)
            | Step::Delete(_)
            | Step::Fault(_)
            | Step::Remediate(_)
            | Step::Expect(_)
            | Step::Script(_)
            | Step::Try { .. } => String::new(),
        }
    }

    /// Whether the timeline gets a `step <name> (<kind>)` line: expectations, faults and
    /// remediations write their own entries.
    pub fn has_timeline_line(&self) -> bool {
        !matches!(self, Step::Expect(_) | Step::Fault(_) | Step::Remediate(_))
    }
}

impl PlannedStep {
    /// The typed steps of a scenario (or of a `try`, `catch`, `finally`).
    pub fn plan(steps: &[model::Step]) -> Result<Vec<PlannedStep>, RunError> {
        steps.iter().map(PlannedStep::from_model).collect()
    }

    pub fn from_model(s: &model::Step) -> Result<PlannedStep, RunError> {
        // Every field named: a new step kind in the model does not compile until it is typed here.
        let model::Step {
            name,
            description: _,
            timeout,
            apply,
            create,
            patch,
            delete,
            fault,
            remediate,
            sleep,
            expect,
            script,
            try_steps,
            catch,
            finally,
        } = s;
        let mut kinds: Vec<Step> = [
            apply.clone().map(Step::Apply),
            create.clone().map(Step::Create),
            patch.clone().map(Step::Patch),
            delete.clone().map(Step::Delete),
            fault.clone().map(Step::Fault),
            remediate.clone().map(Step::Remediate),
            sleep.map(Step::Sleep),
            expect.clone().map(|e| Step::Expect(Box::new(e))),
            script.clone().map(Step::Script),
        ]
        .into_iter()
        .flatten()
        .collect();
        if let Some(t) = try_steps {
            kinds.push(Step::Try {
                steps: PlannedStep::plan(t)?,
                catch: catch.as_deref().map(PlannedStep::plan).transpose()?,
                finally: finally.as_deref().map(PlannedStep::plan).transpose()?,
            });
        }
        let invalid = |problem: String| RunError::InvalidStep {
            step: name.clone().unwrap_or_default(),
            problem,
        };
        if try_steps.is_none() && (catch.is_some() || finally.is_some()) {
            return Err(invalid("`catch` and `finally` go with `try`".into()));
        }
        let step = match kinds.len() {
            1 => kinds.remove(0),
            0 => return Err(invalid("no step kind given".into())),
            _ => {
                let names: Vec<&str> = kinds.iter().map(|k| k.kind().as_str()).collect();
                return Err(invalid(format!(
                    "more than one step kind: {}",
                    names.join(", ")
                )));
            }
        };
        Ok(PlannedStep {
            name: name
                .clone()
                .unwrap_or_else(|| step.kind().as_str().to_string()),
            timeout: *timeout,
            step,
        })
    }

    /// The expectations of these steps and of the steps inside them, in order.
    pub fn expectations(steps: &[PlannedStep]) -> Vec<&Expect> {
        let mut out = vec![];
        for s in steps {
            match &s.step {
                Step::Expect(e) => out.push(&**e),
                Step::Try {
                    steps,
                    catch,
                    finally,
                } => {
                    for group in [Some(steps), catch.as_ref(), finally.as_ref()]
                        .into_iter()
                        .flatten()
                    {
                        out.extend(PlannedStep::expectations(group));
                    }
                }
                Step::Apply(_)
                | Step::Create(_)
                | Step::Patch(_)
                | Step::Delete(_)
                | Step::Fault(_)
                | Step::Remediate(_)
                | Step::Sleep(_)
                | Step::Script(_) => {}
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(yaml: &str) -> model::Step {
        serde_yaml::from_str(yaml).unwrap()
    }

    #[test]
    fn each_model_step_becomes_one_typed_step() {
        let s = PlannedStep::from_model(&step("{name: a, apply: x.yaml}")).unwrap();
        assert_eq!((s.name.as_str(), s.step.kind()), ("a", StepKind::Apply));
        assert_eq!(s.step.detail(), ": x.yaml");
        let s = PlannedStep::from_model(&step("{sleep: 2s}")).unwrap();
        assert_eq!((s.name.as_str(), s.step.detail()), ("sleep", ": 2s".into()));
        let s = PlannedStep::from_model(&step(
            "{name: t, try: [{expect: {name: e1, log: {source: kubelet, pattern: x}}}], \
             catch: [{sleep: 1s}], finally: [{expect: {name: e2, log: {source: kubelet, pattern: y}}}]}",
        ))
        .unwrap();
        assert_eq!(s.step.kind(), StepKind::Try);
        let names: Vec<_> = PlannedStep::expectations(std::slice::from_ref(&s))
            .into_iter()
            .map(|e| e.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["e1", "e2"]);
    }

    #[test]
    fn a_step_with_no_kind_or_two_is_refused_not_unwrapped() {
        let e = PlannedStep::from_model(&step("{name: empty}")).unwrap_err();
        assert_eq!(e.to_string(), "step `empty`: no step kind given");
        let e =
            PlannedStep::from_model(&step("{name: two, sleep: 1s, apply: x.yaml}")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "step `two`: more than one step kind: apply, sleep"
        );
        let e = PlannedStep::from_model(&step("{name: c, sleep: 1s, catch: []}")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "step `c`: `catch` and `finally` go with `try`"
        );
    }
}
