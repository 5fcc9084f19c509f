package ephemeral

import "github.com/kustos-dev/kustos/internal/lifecycle"

// Vocabulary names the Events the pipeline writes about the Cleaner detector's Changes.
func Vocabulary() lifecycle.Vocabulary {
	return lifecycle.Vocabulary{
		Proposed: "CleanupProposed", Merged: "CleanupMerged", Declined: "CleanupDeclined", Applied: "CleanedUp",
		MergedNote:   "the object goes when the GitOps tool syncs the merge",
		DeclinedNote: "the object stays as Git has it",
	}
}
