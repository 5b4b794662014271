// Command registrar registers a CSI driver with the kubelet's plugin manager, the job of
// node-driver-registrar (which the Go module proxy does not serve here): it serves the kubelet's
// plugin registration API (k8s.io/kubelet/pkg/apis/pluginregistration/v1) on
// <registry>/<driver>-reg.sock; the kubelet's plugin watcher finds the socket, calls GetInfo,
// registers the driver's endpoint with its CSI plugin (CSINode gets the driver) and reports back
// through NotifyRegistrationStatus. A failed registration ends the process, as upstream's does,
// so the container restarts and the socket is made again.
package main

import (
	"context"
	"flag"
	"log"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

var (
	driver   = flag.String("driver-name", "hostpath.csi.faultline.dev", "the CSI driver's name")
	endpoint = flag.String("kubelet-registration-path", "/var/lib/kubelet/plugins/hostpath.csi.faultline.dev/csi.sock", "the driver's socket as the kubelet sees it")
	registry = flag.String("registration-dir", "/registration", "the kubelet's plugins_registry directory")
)

type registrar struct {
	registerapi.UnimplementedRegistrationServer
}

func (registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              *driver,
		Endpoint:          *endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

func (registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if !s.PluginRegistered {
		log.Fatalf("the kubelet did not register %s: %s", *driver, s.Error)
	}
	log.Printf("the kubelet registered %s", *driver)
	return &registerapi.RegistrationStatusResponse{}, nil
}

func main() {
	flag.Parse()
	sock := filepath.Join(*registry, *driver+"-reg.sock")
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		log.Fatal(err)
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}
	g := grpc.NewServer()
	registerapi.RegisterRegistrationServer(g, registrar{})
	log.Printf("registering %s (endpoint %s) through %s", *driver, *endpoint, sock)
	log.Fatal(g.Serve(l))
}
