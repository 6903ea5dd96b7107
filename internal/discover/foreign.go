package discover

import "sort"

// ForeignFleet reports whether the inventories hold apps and not one of them takes a source from the repository
// being read (match says which repoURLs are it, or are otherwise rendered here): the checkout is known under the
// wrong names (a fork, a mirror, another remote) and nothing was rendered, which must not read as an all-clear.
// It also returns the repoURLs the apps do name, most named first, at most three.
func ForeignFleet(match func(repoURL string) bool, invs ...*Inventory) (bool, []string) {
	count := map[string]int{}
	apps := 0
	for _, inv := range invs {
		if inv == nil {
			continue
		}
		for _, a := range inv.Apps() {
			apps++
			for _, src := range a.App.Spec.GetSources() {
				if match(src.RepoURL) {
					return false, nil
				}
				if src.RepoURL != "" {
					count[src.RepoURL]++
				}
			}
		}
	}
	if apps == 0 {
		return false, nil
	}
	named := make([]string, 0, len(count))
	for u := range count {
		named = append(named, u)
	}
	sort.Slice(named, func(i, j int) bool {
		if count[named[i]] != count[named[j]] {
			return count[named[i]] > count[named[j]]
		}
		return named[i] < named[j]
	})
	if len(named) > 3 {
		named = named[:3]
	}
	return true, named
}
