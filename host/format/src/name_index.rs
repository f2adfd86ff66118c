//! [`NameIndex`]: finds the entries of a table by name, for tables of
//! hundreds of thousands of names (kallsyms, BTF) that are looked up a
//! few times: one hash per name and a sort of integers, no string sort.

/// Entries by the hash of their name, sorted.
#[derive(Debug, Default, Clone)]
pub struct NameIndex {
    hashes: Vec<(u64, u32)>,
}

/// FNV-1a, 64 bits: short names hash in a few nanoseconds, and the same
/// name always gives the same hash (tests, fuzzing). Collisions only cost
/// a comparison: [`NameIndex::candidates`] leaves the check to the caller.
fn hash(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

impl NameIndex {
    /// An index of `names`, entry `i` being the `i`th.
    pub fn new<'n>(names: impl Iterator<Item = &'n str>) -> Self {
        let mut hashes: Vec<(u64, u32)> = names.enumerate().map(|(i, name)| (hash(name), i as u32)).collect();
        hashes.sort_unstable();
        NameIndex { hashes }
    }

    /// The entries whose name may be `name`, in entry order: the caller
    /// checks the names (hashes collide).
    pub fn candidates(&self, name: &str) -> impl Iterator<Item = u32> + '_ {
        let h = hash(name);
        let first = self.hashes.partition_point(|&(x, _)| x < h);
        self.hashes[first..].iter().take_while(move |&&(x, _)| x == h).map(|&(_, i)| i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_entry_of_a_name_in_order() {
        let names = ["b", "a", "b", "c"];
        let index = NameIndex::new(names.iter().copied());
        let found =
            |n: &str| -> Vec<u32> { index.candidates(n).filter(|&i| names[i as usize] == n).collect() };
        assert_eq!(found("b"), [0, 2]);
        assert_eq!(found("a"), [1]);
        assert_eq!(found("d"), Vec::<u32>::new());
    }
}
