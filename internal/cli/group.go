package cli

import (
	"slices"

	"github.com/spf13/pflag"
)

// The help groups, in the order help and docs/cli.md show them. A flag outside every group is
// shown under "Other flags".
const (
	GroupInput         = "Input"
	GroupGeneral       = "General"
	GroupCluster       = "Cluster flags (shared by the commands that read a cluster, as kubectl's)"
	GroupState         = "State & leader election"
	GroupQuota         = "Quota"
	GroupPR            = "PR mode / GitHub"
	GroupCleaners      = "Cleaners"
	GroupExpiry        = "Expiry"
	GroupExtension     = "Extension links"
	GroupNotifications = "Notifications"
	GroupInactivity    = "Inactivity"
	GroupVSphere       = "vSphere VMs"
	GroupPrometheus    = "Prometheus"
	GroupWebhook       = "Admission webhook & egress"
	GroupGates         = "Before a removal: backup & submission"
	groupOther         = "Other flags"
)

var groupOrder = []string{GroupInput, GroupGeneral, GroupCluster, GroupState, GroupQuota, GroupPR, GroupCleaners, GroupExpiry,
	GroupExtension, GroupNotifications, GroupVSphere, GroupInactivity, GroupPrometheus, GroupWebhook, GroupGates, groupOther}

// groupAnnotation is the pflag annotation that holds a flag's help group.
const groupAnnotation = "kustos.io/help-group"

// InGroup runs add, which defines flags on fs, and puts every flag add defined in group. Flags
// defined by a nested InGroup keep their own group.
func InGroup(fs *pflag.FlagSet, group string, add func()) {
	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	add()
	fs.VisitAll(func(f *pflag.Flag) {
		if before[f.Name] {
			return
		}
		if _, ok := f.Annotations[groupAnnotation]; ok {
			return
		}
		if f.Annotations == nil {
			f.Annotations = map[string][]string{}
		}
		f.Annotations[groupAnnotation] = []string{group}
	})
}

// groupOf is f's help group.
func groupOf(f *pflag.Flag) string {
	if g := f.Annotations[groupAnnotation]; len(g) == 1 {
		return g[0]
	}
	return groupOther
}

// grouped returns fs's flags by group, groups in help order, flags in definition order.
func grouped(fs *pflag.FlagSet) (groups []string, flags map[string][]*pflag.Flag) {
	flags = map[string][]*pflag.Flag{}
	sorted := fs.SortFlags
	fs.SortFlags = false
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" { // cobra's --help, said once at the top of help
			return
		}
		g := groupOf(f)
		flags[g] = append(flags[g], f)
	})
	fs.SortFlags = sorted
	for _, g := range groupOrder {
		if len(flags[g]) > 0 {
			groups = append(groups, g)
		}
	}
	var extra []string
	for g := range flags {
		if !slices.Contains(groupOrder, g) {
			extra = append(extra, g)
		}
	}
	slices.Sort(extra)
	return append(groups, extra...), flags
}
