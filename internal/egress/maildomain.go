package egress

import "strings"

// AllowsMailDomain reports whether the domain of the mail address addr, what follows its last
// "@", is one of h's names or below one of its suffixes, by the rules of Allows (--owner-domains
// checks an owner's address with it). An address without "@", or whose domain is no host name
// (an address literal such as [10.0.0.1]), never matches; nor does anything when h is empty.
func (h HostNames) AllowsMailDomain(addr string) bool {
	i := strings.LastIndexByte(addr, '@')
	if i < 0 {
		return false
	}
	return h.Allows(addr[i+1:])
}
