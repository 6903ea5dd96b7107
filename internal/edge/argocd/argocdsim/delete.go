package argocdsim

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/watch"
)

// DeleteApp deletes an application as `argocd app delete --cascade=false` does once Kubernetes removed the
// object: a new resourceVersion, a DELETED event with its last state on the streams open now (a stream that is
// down misses it: a resumed stream does not replay it, server/application/application.go Watch), and the app
// gone from lists and gets. Timers of its operations find it gone and do nothing.
func (s *Server) DeleteApp(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.apps[name]
	if !ok {
		return fmt.Errorf("deleting application %q: not found", name)
	}
	s.rv++
	st.app.ResourceVersion = strconv.FormatInt(s.rv, 10)
	s.broadcastLocked(watch.Deleted, st)
	delete(s.apps, name)
	return nil
}
