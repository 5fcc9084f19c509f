package app

import (
	"github.com/kustos-dev/kustos/internal/extension"
)

// keeper serves the keep links of inactivity alerts on the extension server
// (--inactivity-keep-periods, --inactivity-keep-max); mapper names the targets' versions in the
// OwnerKept Events.
// No periods (options built without DefaultInactivityOptions): no keep links.
func keeper(in InactivityOptions, mapper extension.KindMapper) (*extension.Keeper, error) {
	if len(in.KeepPeriods) == 0 {
		return nil, nil
	}
	periods, err := extension.ParseKeepPeriods(in.KeepPeriods, in.KeepMax)
	if err != nil {
		return nil, err
	}
	return &extension.Keeper{Periods: periods, Max: in.KeepMax, Mapper: mapper}, nil
}
