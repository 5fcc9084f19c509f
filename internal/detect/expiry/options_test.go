package expiry

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Options
		mail bool
		want string // "": valid
	}{
		{"zero", Options{}, false, ""},
		{"negative default ttl", Options{Settings: Settings{DefaultTTL: -time.Hour}}, false, "--default-ttl=-1h: must not be negative"},
		{"negative warning", Options{Settings: Settings{WarningBefore: -time.Hour}}, false, "--expiry-warning-before=-1h: must not be negative"},
		{"negative notification interval", Options{Settings: Settings{NotificationInterval: -time.Hour}}, false, "--notification-interval=-1h: must not be negative"},
		{"admin email without mail", Options{AdminEmail: "ops@example.com", DigestInterval: time.Hour}, false, "--admin-email=ops@example.com needs --notify-mail-host"},
		{"admin email, no digest interval", Options{AdminEmail: "ops@example.com"}, true, "--orphan-digest-interval=0s: must be positive"},
		{"admin email with mail", Options{AdminEmail: "ops@example.com", DigestInterval: 24 * time.Hour}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate(tc.mail)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Validate: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestOptionsSettingsFor(t *testing.T) {
	o := Options{Settings: Settings{DefaultTTL: time.Hour}}
	for _, tc := range []struct {
		name             string
		carriesOut, mail bool
	}{
		{"observer, no mail", false, false},
		{"carries out, mail", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := o.SettingsFor(tc.carriesOut, tc.mail)
			if s.CarriesOut != tc.carriesOut || s.Mail != tc.mail || s.DefaultTTL != time.Hour {
				t.Errorf("SettingsFor(%t, %t) = CarriesOut %t, Mail %t, DefaultTTL %s", tc.carriesOut, tc.mail, s.CarriesOut, s.Mail, s.DefaultTTL)
			}
		})
	}
}
