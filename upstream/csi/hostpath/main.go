// Command hostpath is the CSI driver of the real kind node image (docs/kind.md "Real CSI"): the
// job csi-driver-host-path does in Kubernetes' own e2e tests, which the Go module proxy does not
// serve here. One binary serves the Identity, Controller and Node services of the CSI spec
// (github.com/container-storage-interface/spec) on a unix socket, so the real
// external-provisioner, external-attacher and the kubelet's CSI volume plugin drive it:
//
//   - CreateVolume names a volume after the request (idempotent); no data is made until a node
//     stages it. DeleteVolume forgets nothing (there is no controller-side state).
//   - ControllerPublishVolume/Unpublish succeed: `attachRequired: true` in the CSIDriver makes
//     the attach/detach controller and the external-attacher go through VolumeAttachments.
//   - NodeStageVolume bind-mounts the node's data directory <root>/<volume id> at the staging
//     path (the kubelet's `globalmount`); NodePublishVolume bind-mounts that at the pod's target
//     path; Unpublish and Unstage unmount. A volume's data lives on the node that stages it.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

const version = "1.0.0"

var (
	endpoint = flag.String("endpoint", "/csi/csi.sock", "unix socket to serve on")
	driver   = flag.String("driver-name", "hostpath.csi.faultline.dev", "the driver's name")
	nodeID   = flag.String("node-id", os.Getenv("NODE_NAME"), "this node's name (NodeGetInfo)")
	root     = flag.String("data-root", "/var/lib/csi-hostpath", "where volumes' data lives on the node")
)

type server struct {
	csi.UnimplementedIdentityServer
	csi.UnimplementedControllerServer
	csi.UnimplementedNodeServer
}

// Identity.

func (server) GetPluginInfo(context.Context, *csi.GetPluginInfoRequest) (*csi.GetPluginInfoResponse, error) {
	return &csi.GetPluginInfoResponse{Name: *driver, VendorVersion: version}, nil
}

func (server) GetPluginCapabilities(context.Context, *csi.GetPluginCapabilitiesRequest) (*csi.GetPluginCapabilitiesResponse, error) {
	return &csi.GetPluginCapabilitiesResponse{Capabilities: []*csi.PluginCapability{{
		Type: &csi.PluginCapability_Service_{Service: &csi.PluginCapability_Service{
			Type: csi.PluginCapability_Service_CONTROLLER_SERVICE}},
	}}}, nil
}

func (server) Probe(context.Context, *csi.ProbeRequest) (*csi.ProbeResponse, error) {
	return &csi.ProbeResponse{}, nil
}

// Controller.

var unsafeChars = regexp.MustCompile(`[^a-zA-Z0-9-]`)

func (server) CreateVolume(_ context.Context, r *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	if r.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "name missing")
	}
	if len(r.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities missing")
	}
	for _, c := range r.GetVolumeCapabilities() {
		if c.GetBlock() != nil {
			return nil, status.Error(codes.InvalidArgument, "block volumes are not supported")
		}
	}
	// The same name gives the same id: a retried CreateVolume is idempotent, as the spec asks.
	// The id is the name (the external-provisioner passes the PV's name, pvc-<uid>), so the
	// volume handle is the PV's name, as Longhorn's is: the staleDeviceMount fault finds the
	// kubelet's globalmount by it.
	id := unsafeChars.ReplaceAllString(r.GetName(), "-")
	log.Printf("CreateVolume %s -> %s (%d bytes)", r.GetName(), id, r.GetCapacityRange().GetRequiredBytes())
	return &csi.CreateVolumeResponse{Volume: &csi.Volume{
		VolumeId:      id,
		CapacityBytes: r.GetCapacityRange().GetRequiredBytes(),
	}}, nil
}

func (server) DeleteVolume(_ context.Context, r *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	if r.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id missing")
	}
	log.Printf("DeleteVolume %s", r.GetVolumeId())
	return &csi.DeleteVolumeResponse{}, nil
}

func (server) ControllerPublishVolume(_ context.Context, r *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if r.GetVolumeId() == "" || r.GetNodeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id or node id missing")
	}
	log.Printf("ControllerPublishVolume %s on %s", r.GetVolumeId(), r.GetNodeId())
	return &csi.ControllerPublishVolumeResponse{}, nil
}

func (server) ControllerUnpublishVolume(_ context.Context, r *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if r.GetVolumeId() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id missing")
	}
	log.Printf("ControllerUnpublishVolume %s from %s", r.GetVolumeId(), r.GetNodeId())
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

func (server) ValidateVolumeCapabilities(_ context.Context, r *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeCapabilities: r.GetVolumeCapabilities()}}, nil
}

func controllerCap(t csi.ControllerServiceCapability_RPC_Type) *csi.ControllerServiceCapability {
	return &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
		Rpc: &csi.ControllerServiceCapability_RPC{Type: t}}}
}

func (server) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: []*csi.ControllerServiceCapability{
		controllerCap(csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME),
		controllerCap(csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME),
	}}, nil
}

// Node.

// mounted: whether path is a mount point (its own line in /proc/self/mountinfo).
func mounted(path string) (bool, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1024*1024)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) > 4 && unescape(fields[4]) == path {
			return true, nil
		}
	}
	return false, s.Err()
}

// unescape undoes mountinfo's octal escapes of space, tab, newline and backslash.
func unescape(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}

func bind(src, dst string, readOnly bool) error {
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s at %s: %w", src, dst, err)
	}
	if readOnly {
		if err := syscall.Mount("", dst, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("remount %s read-only: %w", dst, err)
		}
	}
	return nil
}

func unmount(path string) error {
	m, err := mounted(path)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if m {
		if err := syscall.Unmount(path, 0); err != nil {
			return status.Errorf(codes.Internal, "unmount %s: %v", path, err)
		}
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return status.Errorf(codes.Internal, "remove %s: %v", path, err)
	}
	return nil
}

func (server) NodeStageVolume(_ context.Context, r *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id, staging := r.GetVolumeId(), r.GetStagingTargetPath()
	if id == "" || staging == "" || r.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume id, staging path or capability missing")
	}
	data := filepath.Join(*root, filepath.Base(id))
	if err := os.MkdirAll(data, 0o777); err != nil {
		return nil, status.Errorf(codes.Internal, "data directory: %v", err)
	}
	if err := os.MkdirAll(staging, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "staging path: %v", err)
	}
	if m, err := mounted(staging); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if !m {
		if err := bind(data, staging, false); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	log.Printf("NodeStageVolume %s at %s", id, staging)
	return &csi.NodeStageVolumeResponse{}, nil
}

func (server) NodeUnstageVolume(_ context.Context, r *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	if r.GetVolumeId() == "" || r.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id or staging path missing")
	}
	if err := unmount(r.GetStagingTargetPath()); err != nil {
		return nil, err
	}
	log.Printf("NodeUnstageVolume %s from %s", r.GetVolumeId(), r.GetStagingTargetPath())
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (server) NodePublishVolume(_ context.Context, r *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id, staging, target := r.GetVolumeId(), r.GetStagingTargetPath(), r.GetTargetPath()
	if id == "" || staging == "" || target == "" || r.GetVolumeCapability() == nil {
		return nil, status.Error(codes.InvalidArgument, "volume id, staging path, target path or capability missing")
	}
	if m, err := mounted(staging); err != nil || !m {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", id, staging)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return nil, status.Errorf(codes.Internal, "target path: %v", err)
	}
	if m, err := mounted(target); err != nil {
		return nil, status.Error(codes.Internal, err.Error())
	} else if !m {
		if err := bind(staging, target, r.GetReadonly()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
	}
	log.Printf("NodePublishVolume %s at %s", id, target)
	return &csi.NodePublishVolumeResponse{}, nil
}

func (server) NodeUnpublishVolume(_ context.Context, r *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	if r.GetVolumeId() == "" || r.GetTargetPath() == "" {
		return nil, status.Error(codes.InvalidArgument, "volume id or target path missing")
	}
	if err := unmount(r.GetTargetPath()); err != nil {
		return nil, err
	}
	log.Printf("NodeUnpublishVolume %s from %s", r.GetVolumeId(), r.GetTargetPath())
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

func (server) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{
			Type: csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME}},
	}}}, nil
}

func (server) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	if *nodeID == "" {
		return nil, status.Error(codes.FailedPrecondition, "no node id: set NODE_NAME or --node-id")
	}
	return &csi.NodeGetInfoResponse{NodeId: *nodeID}, nil
}

func main() {
	flag.Parse()
	if err := os.MkdirAll(filepath.Dir(*endpoint), 0o750); err != nil {
		log.Fatal(err)
	}
	if err := os.Remove(*endpoint); err != nil && !os.IsNotExist(err) {
		log.Fatal(err)
	}
	l, err := net.Listen("unix", *endpoint)
	if err != nil {
		log.Fatal(err)
	}
	g := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if err != nil {
			log.Printf("%s: %v", info.FullMethod, err)
		}
		return resp, err
	}))
	s := server{}
	csi.RegisterIdentityServer(g, s)
	csi.RegisterControllerServer(g, s)
	csi.RegisterNodeServer(g, s)
	log.Printf("%s %s serving on %s (node %q, data in %s)", *driver, version, *endpoint, *nodeID, *root)
	log.Fatal(g.Serve(l))
}
