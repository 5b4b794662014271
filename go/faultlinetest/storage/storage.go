// Package storage builds the storage faults of faultline's fault catalogue
// (harness/faults/src/ops.rs, the operations whose area is "storage") for
// faultlinetest.Sim.InjectOperation:
//
//	fault, err := sim.InjectOperation(ctx, storage.CSIDriverUnregistered("worker-01", ""))
//	...
//	err = fault.Heal(ctx)
//
// Each constructor writes the operation as a scenario does; the simulated cluster carries it out
// with the same node primitives as the scenario runner (docs/fidelity.md says what each one
// reproduces). TestEveryCatalogueStorageFaultHasAConstructor holds this list to the catalogue.
package storage

import "faultline.dev/go/faultlinetest"

func op(key, node string, fields map[string]any) faultlinetest.Operation {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["node"] = node
	return faultlinetest.Operation{Key: key, Fields: fields}
}

// Volume names the volume of a stale device mount: PVC, PV or DeletedPV.
type Volume struct {
	kind, name string
}

// PVC is the volume bound to the claim "namespace/name" (or "name" in default).
func PVC(name string) Volume { return Volume{"pvc", name} }

// PV is a PersistentVolume by name.
func PV(name string) Volume { return Volume{"pv", name} }

// DeletedPV is a PersistentVolume that no longer exists in the API (the incident's case).
func DeletedPV(name string) Volume { return Volume{"deletedPV", name} }

// Holder is what keeps a stale device mount busy, which decides what releases it.
type Holder string

const (
	// HeldByKubelet: the kubelet's own stale state; a kubelet restart cleans it up (the default).
	HeldByKubelet Holder = "kubelet"
	// HeldByCSIPlugin: the node plugin process; restarting the plugin releases it.
	HeldByCSIPlugin Holder = "csiPlugin"
	// HeldByExternal: another reference; only a reboot or power cycle releases it.
	HeldByExternal Holder = "external"
)

// OtherVolumes is what a stale device mount does to the node's other volumes (sim only).
type OtherVolumes string

const (
	// Unaffected: only this volume's operations wait, as upstream (the default).
	Unaffected OtherVolumes = "unaffected"
	// PluginHangs: other volumes' MountDevice on the node runs to the 2m CSI deadline.
	PluginHangs OtherVolumes = "pluginHangs"
	// QueueBlocked: the incident RCA's node-wide block; no other volume operation starts.
	QueueBlocked OtherVolumes = "queueBlocked"
)

// StaleDeviceMount leaves the volume's device mount on node with another reference, so its
// UnmountDevice fails ("is still mounted by other references") and retries; the node keeps the
// volume in use. heldBy and other may be empty for their defaults (HeldByKubelet, Unaffected).
func StaleDeviceMount(node string, v Volume, heldBy Holder, other OtherVolumes) faultlinetest.Operation {
	f := map[string]any{"volume": map[string]string{v.kind: v.name}}
	if heldBy != "" {
		f["heldBy"] = string(heldBy)
	}
	if other != "" {
		f["otherVolumes"] = string(other)
	}
	return op("staleDeviceMount", node, f)
}

// CSIPluginDown makes the CSI node plugin on node crash-loop: volume calls on the node fail to
// dial its socket (FailedMount) while the driver stays registered.
func CSIPluginDown(node string) faultlinetest.Operation { return op("csiPluginDown", node, nil) }

// CSIPluginRestart restarts the CSI node plugin's container on node (one-shot: nothing to heal).
func CSIPluginRestart(node string) faultlinetest.Operation {
	return op("csiPluginRestart", node, nil)
}

// CSIDriverUnregistered removes the driver's registration socket on node: the driver leaves the
// node's CSINode and mounts fail with "driver name ... not found in the list of registered CSI
// drivers"; healed, the registrar registers it again. driver "" is driver.longhorn.io.
func CSIDriverUnregistered(node, driver string) faultlinetest.Operation {
	f := map[string]any{}
	if driver != "" {
		f["driver"] = driver
	}
	return op("csiDriverUnregistered", node, f)
}

// KubeletWorkersSaturated leaves stalePods terminated pods on node whose volumes cannot be
// cleaned up (namespace snapshots); the PLEG relist hangs on their sandboxes, so the node turns
// Ready=False after 3 minutes (scaled). Healed, the stale pods are deleted.
func KubeletWorkersSaturated(node string, stalePods int) faultlinetest.Operation {
	return op("kubeletWorkersSaturated", node, map[string]any{"stalePods": stalePods})
}

// HungNFS makes NFS servers stop answering node: its ReadWriteMany volumes' operations end at
// the CSI deadline, and a reboot meanwhile hangs until power cycled.
func HungNFS(node string) faultlinetest.Operation { return op("hungNfs", node, nil) }

// IOErrors makes node's volume disks return I/O errors: mounts and unmounts fail with
// "input/output error".
func IOErrors(node string) faultlinetest.Operation { return op("ioErrors", node, nil) }

// All is one operation of each constructor, on node (what the catalogue check compares).
func All(node string) []faultlinetest.Operation {
	return []faultlinetest.Operation{
		StaleDeviceMount(node, PV("pv-example"), "", ""),
		CSIPluginDown(node),
		CSIPluginRestart(node),
		CSIDriverUnregistered(node, ""),
		KubeletWorkersSaturated(node, 3),
		HungNFS(node),
		IOErrors(node),
	}
}
