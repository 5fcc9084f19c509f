package pipeline

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

func typesUID(uid string) types.UID { return types.UID(uid) }

func sortStrings(s []string) { sort.Strings(s) }
