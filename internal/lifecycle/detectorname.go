package lifecycle

// DetectorLabel is the name people read for the detector that a Key, a Lease or a Change calls
// detector: metrics' detector label, log lines, Events and `kustos status` use it. It is the
// same name but for the Cleaner detector, whose Keys (and so its Lease names, group Keys and
// branches) keep the "ephemeral" prefix earlier releases wrote — an upgraded installation must
// still find its Leases and follow its pull requests — while people read and type "cleaner".
func DetectorLabel(detector string) string {
	if detector == "ephemeral" {
		return "cleaner"
	}
	return detector
}
