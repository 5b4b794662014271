// Command pause is the pod sandbox's process, in place of registry.k8s.io/pause (which is
// built from kubernetes/build/pause/linux/pause.c): it holds the pod's namespaces, reaps the
// zombies it inherits as PID 1 of the pod, and exits 0 on SIGINT or SIGTERM.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is the pause image's tag this stands in for (kubeadm v1.35's constants.PauseVersion).
const version = "3.10.1"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "-v" {
		fmt.Printf("pause.go %s (faultline)\n", version)
		return
	}
	if os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", s)
			os.Exit(0)
		}
		// Reap every exited child: several SIGCHLDs may arrive as one.
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
