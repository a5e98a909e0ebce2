package netlab

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os/exec"
	"strings"
)

// ip runs one iproute2 command.
func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ipAll runs iproute2 commands in order, up to the first that fails.
func ipAll(cmds ...[]string) error {
	for _, args := range cmds {
		if err := ip(args...); err != nil {
			return err
		}
	}
	return nil
}

// ipOutput runs an iproute2 command and returns what it printed.
func ipOutput(args ...string) (string, error) {
	out, err := exec.Command("ip", args...).Output()
	if err != nil {
		return "", fmt.Errorf("ip %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

// ipJSON runs an iproute2 command with -j and decodes its answer.
func ipJSON(v any, args ...string) error {
	out, err := ipOutput(append([]string{"-j"}, args...)...)
	// ip prints nothing at all, not [], when there is nothing to list.
	if err != nil || strings.TrimSpace(out) == "" {
		return err
	}
	return json.Unmarshal([]byte(out), v)
}

// subnet is one /24 of 10.213.0.0/16: a lab's hosts are .1 to .n, its
// bridge .254.
type subnet netip.Prefix

func (s subnet) host(i int) string {
	a := netip.Prefix(s).Addr().As4()
	a[3] = byte(i)
	return netip.AddrFrom4(a).String()
}

// addBridge makes the bridge, up, with .254 of a /24 that no other interface
// of the root namespace uses, and returns that /24. Two labs starting at once
// may pick the same one: each checks again after taking it and, on a clash,
// lets go and picks another.
func addBridge(name string) (subnet, error) {
	if err := ipAll(
		[]string{"link", "add", name, "type", "bridge"},
		[]string{"link", "set", name, "up"},
	); err != nil {
		return subnet{}, err
	}
	for range 20 {
		s := subnet(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 213, byte(1 + rand.IntN(253)), 0}), 24))
		clash, err := inUse(netip.Prefix(s), name)
		if err != nil {
			return subnet{}, err
		}
		if clash {
			continue
		}
		cidr := s.host(254) + "/24"
		if err := ip("addr", "add", cidr, "dev", name); err != nil {
			return subnet{}, err
		}
		if clash, err = inUse(netip.Prefix(s), name); err != nil {
			return subnet{}, err
		}
		if !clash {
			return s, nil
		}
		if err := ip("addr", "del", cidr, "dev", name); err != nil {
			return subnet{}, err
		}
	}
	return subnet{}, fmt.Errorf("no free /24 in 10.213.0.0/16 after 20 tries")
}

// inUse reports whether an interface other than except has an IPv4 address
// whose network overlaps p.
func inUse(p netip.Prefix, except string) (bool, error) {
	var links []struct {
		IfName   string `json:"ifname"`
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
		} `json:"addr_info"`
	}
	if err := ipJSON(&links, "-4", "addr", "show"); err != nil {
		return false, err
	}
	for _, l := range links {
		for _, a := range l.AddrInfo {
			addr, err := netip.ParseAddr(a.Local)
			if err != nil || l.IfName == except {
				continue
			}
			if netip.PrefixFrom(addr, a.PrefixLen).Masked().Overlaps(p) {
				return true, nil
			}
		}
	}
	return false, nil
}
