// Package cleanereval is `kustos cleaner eval`: the Cleaner detector's decision made offline,
// from Cleaners and objects in YAML or JSON files, with the same code the controller runs
// (ephemeral.Compile, Spec.Gather, Spec.Decide). It lets a team try its conditions against a
// dump of its namespace before applying a Cleaner, and see when it would act.
package cleanereval
