package helmrelease

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	hrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	helmtime "helm.sh/helm/v3/pkg/time"
)

// resourcePolicyAnnotation is helm's helm.sh/resource-policy (helm's kube.ResourcePolicyAnno).
const resourcePolicyAnnotation = "helm.sh/resource-policy"

// This file is helm's uninstall (helm v3.21: pkg/action/uninstall.go, hooks.go and
// resource_policy.go) step by step, with the options Kustos used with action.Uninstall: hooks run,
// history purged, deletion propagation background, no --wait. Helm's release storage and
// kubeClient (kube.go, what helm's kube client does) make every API call (doc.go says why
// pkg/action and pkg/kube are not linked). One step of helm's is left out on purpose: copying hook
// logs (helm.sh/hook-output-log-policy), which action.Configuration.Init sent to io.Discard, so
// nothing changes.

// uninstallRelease uninstalls the latest revision of history and purges history, as
// action.Uninstall.Run does. The release it returns carries its hooks' LastRun.
func (s *session) uninstallRelease(history []*hrelease.Release, timeout time.Duration) (*hrelease.Release, error) {
	releaseutil.SortByRevision(history)
	rel := history[len(history)-1]
	if uninstalled(rel) {
		if err := s.purge(history); err != nil {
			return nil, fmt.Errorf("uninstall: Failed to purge the release: %w", err)
		}
		return rel, nil
	}

	s.log("uninstall: Deleting %s", rel.Name)
	if rel.Info == nil {
		rel.Info = &hrelease.Info{} // a record written without one; helm's would panic
	}
	rel.Info.Status = hrelease.StatusUninstalling
	rel.Info.Deleted = helmtime.Now()
	rel.Info.Description = "Deletion in progress (or silently failed)"
	if err := s.execHooks(rel, hrelease.HookPreDelete, timeout); err != nil {
		return rel, err
	}
	// From here on the release is in status uninstalling, also after a crash.
	if err := s.releases.Update(rel); err != nil {
		s.log("uninstall: Failed to store updated release: %s", err)
	}

	if errs := s.deleteRelease(rel); len(errs) > 0 {
		s.log("uninstall: Failed to delete release: %s", errs)
		return nil, fmt.Errorf("failed to delete release: %s", rel.Name)
	}

	var errs []error
	if err := s.execHooks(rel, hrelease.HookPostDelete, timeout); err != nil {
		errs = append(errs, err)
	}
	rel.Info.Status = hrelease.StatusUninstalled
	rel.Info.Description = "Uninstallation complete"
	if err := s.purge(history); err != nil {
		errs = append(errs, fmt.Errorf("uninstall: Failed to purge the release: %w", err))
	}
	if len(errs) > 0 {
		return rel, &flatError{msg: fmt.Sprintf("uninstallation completed with %d error(s): %s", len(errs), joinErrors(errs)), err: errors.Join(errs...)}
	}
	return rel, nil
}

// purge deletes every revision's record.
func (s *session) purge(history []*hrelease.Release) error {
	for _, r := range history {
		if _, err := s.releases.Delete(r.Name, r.Version); err != nil {
			return err
		}
	}
	return nil
}

// deleteRelease deletes the objects of rel's manifest in helm's uninstall order, but those
// annotated helm.sh/resource-policy: keep (manifestObjects, which the plan reads too).
func (s *session) deleteRelease(rel *hrelease.Release) []error {
	resources, err := manifestObjects(s.kube, rel)
	if err != nil {
		return []error{err}
	}
	return s.kube.Delete(resources)
}

// toDelete is files but those with a helm.sh/resource-policy annotation, as helm's
// filterManifestsToKeep: "keep" (any case, spaces trimmed) keeps the object, and so, by
// omission, does any other value — helm puts such an object in neither its keep list nor its
// delete list. A chart that renders the policy from a value defaulting to "" keeps its volume
// under `helm uninstall`; Kustos must not delete it either.
func toDelete(files []releaseutil.Manifest) []releaseutil.Manifest {
	var out []releaseutil.Manifest
	for _, m := range files {
		if m.Head != nil && m.Head.Metadata != nil {
			if _, ok := m.Head.Metadata.Annotations[resourcePolicyAnnotation]; ok {
				continue
			}
		}
		out = append(out, m)
	}
	return out
}

// execHooks runs rel's hooks for event, as helm's execHook: by weight then name; each one's
// earlier objects deleted first (before-hook-creation, the default), created, and watched until
// ready (a Job complete, a Pod succeeded) within timeout; then deleted by their
// hook-succeeded or hook-failed policies.
func (s *session) execHooks(rel *hrelease.Release, event hrelease.HookEvent, timeout time.Duration) error {
	var hooks []*hrelease.Hook
	for _, h := range deleteHooks(rel) { // the hooks the plan reads; helm's would panic on a null one
		if slices.Contains(h.Events, event) {
			hooks = append(hooks, h)
		}
	}
	// Helm stores hooks ordered by kind; keep that order among equals.
	sort.SliceStable(hooks, func(i, j int) bool {
		if hooks[i].Weight == hooks[j].Weight {
			return hooks[i].Name < hooks[j].Name
		}
		return hooks[i].Weight < hooks[j].Weight
	})

	for i, h := range hooks {
		if len(h.DeletePolicies) == 0 {
			h.DeletePolicies = []hrelease.HookDeletePolicy{hrelease.HookBeforeHookCreation}
		}
		if err := s.deleteHookByPolicy(h, hrelease.HookBeforeHookCreation, timeout); err != nil {
			return err
		}
		resources, err := hookObjects(s.kube, h)
		if err != nil {
			return fmt.Errorf("unable to build kubernetes object for %s hook %s: %w", event, h.Path, err)
		}
		h.LastRun = hrelease.HookExecution{StartedAt: helmtime.Now(), Phase: hrelease.HookPhaseRunning}
		if err := s.releases.Update(rel); err != nil {
			s.log("warning: Failed to update release %s: %s", rel.Name, err)
		}
		h.LastRun.Phase = hrelease.HookPhaseUnknown
		if err := s.kube.Create(resources); err != nil {
			h.LastRun.CompletedAt = helmtime.Now()
			h.LastRun.Phase = hrelease.HookPhaseFailed
			return fmt.Errorf("warning: Hook %s %s failed: %w", event, h.Path, err)
		}
		err = s.kube.WatchUntilReady(resources, timeout)
		h.LastRun.CompletedAt = helmtime.Now()
		if err != nil {
			h.LastRun.Phase = hrelease.HookPhaseFailed
			if errDeleting := s.deleteHookByPolicy(h, hrelease.HookFailed, timeout); errDeleting != nil {
				s.log("error deleting the hook resource on hook failure: %v", errDeleting)
			}
			for _, done := range hooks[:i] {
				if err := s.deleteHookByPolicy(done, hrelease.HookSucceeded, timeout); err != nil {
					return err
				}
			}
			return err
		}
		h.LastRun.Phase = hrelease.HookPhaseSucceeded
	}
	for i := len(hooks) - 1; i >= 0; i-- {
		if err := s.deleteHookByPolicy(hooks[i], hrelease.HookSucceeded, timeout); err != nil {
			return err
		}
	}
	return nil
}

// deleteHookByPolicy deletes h's objects, and waits until they are gone, when h has policy.
// A CustomResourceDefinition is never deleted (its custom resources would go with it).
func (s *session) deleteHookByPolicy(h *hrelease.Hook, policy hrelease.HookDeletePolicy, timeout time.Duration) error {
	if h.Kind == "CustomResourceDefinition" || !slices.Contains(h.DeletePolicies, policy) {
		return nil
	}
	resources, err := hookObjects(s.kube, h)
	if err != nil {
		return fmt.Errorf("unable to build kubernetes object for deleting hook %s: %w", h.Path, err)
	}
	if errs := s.kube.Delete(resources); len(errs) > 0 {
		return &flatError{msg: joinErrors(errs), err: errors.Join(errs...)}
	}
	return s.kube.WaitForDelete(resources, timeout)
}

func joinErrors(errs []error) string {
	msgs := make([]string, 0, len(errs))
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	return strings.Join(msgs, "; ")
}
