package faultlinetest

import "testing"

// The inverse table mirrors the sim's NodeOp::inverse: every fault heals, one-shots do not.
func TestInverse(t *testing.T) {
	for _, c := range []struct{ op, want NodeOp }{
		{KubeletStop(), KubeletStart()},
		{KubeletHang(), KubeletStart()},
		{PowerOff(), PowerOn()},
		{PartitionNetwork(), HealNetwork()},
		{HungNFS(), ClearHungNFS()},
		{IOErrors(), ClearIOErrors()},
		{CSIPluginDown(), CSIPluginUp()},
		{ProberBroken(), ProberFixed()},
		{StaleDeviceMount("pv-1"), ClearStaleDeviceMount("pv-1")},
	} {
		got, ok := c.op.Inverse()
		if !ok || got != c.want {
			t.Errorf("%s: inverse %v %v, want %v", c.op.Op, got, ok, c.want)
		}
	}
	for _, op := range []NodeOp{Reboot(), PowerCycle(), KubeletRestart(), CSIPluginRestart(), KubeletStart()} {
		if inv, ok := op.Inverse(); ok {
			t.Errorf("%s: one-shot, got inverse %v", op.Op, inv)
		}
	}
}
