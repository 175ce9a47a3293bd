//! `PMI_process_mapping`: which ranks share a node, in MPICH's notation.
//!
//! The value is `(vector,(start,nnodes,ppn),...)`: each block puts `ppn` consecutive ranks on
//! node `start`, the next `ppn` on node `start+1`, and so on for `nnodes` nodes; blocks follow
//! one another in rank order. Hydra, Slurm and our `mpirun` publish it. A vector that covers
//! fewer ranks than the job has is repeated (as MPICH reads it).

/// The mapping of a job whose rank `r` runs on node `node_of_rank[r]`.
pub fn encode(node_of_rank: &[usize]) -> String {
    // Runs of consecutive ranks on one node...
    let mut runs: Vec<(usize, usize)> = Vec::new();
    for &node in node_of_rank {
        match runs.last_mut() {
            Some((last, count)) if *last == node => *count += 1,
            _ => runs.push((node, 1)),
        }
    }
    // ...then runs of equal length on consecutive nodes become one block.
    let mut blocks: Vec<(usize, usize, usize)> = Vec::new();
    for (node, count) in runs {
        match blocks.last_mut() {
            Some((start, nnodes, ppn)) if *ppn == count && *start + *nnodes == node => *nnodes += 1,
            _ => blocks.push((node, 1, count)),
        }
    }
    let mut text = String::from("(vector");
    for (start, nnodes, ppn) in blocks {
        text.push_str(&format!(",({start},{nnodes},{ppn})"));
    }
    text.push(')');
    text
}

/// The node of each of `size` ranks under `mapping`; an error says what is wrong with it.
pub fn decode(mapping: &str, size: usize) -> Result<Vec<usize>, String> {
    let inner = mapping
        .trim()
        .strip_prefix("(vector")
        .and_then(|rest| rest.strip_suffix(')'))
        .ok_or_else(|| format!("{mapping:?} is not (vector,...)"))?;
    let mut blocks = Vec::new();
    for block in inner.split("),").map(|b| b.trim_start_matches(',')) {
        if block.trim().is_empty() {
            continue;
        }
        let numbers: Vec<usize> = block
            .trim_start_matches('(')
            .trim_end_matches(')')
            .split(',')
            .map(|n| n.trim().parse::<usize>())
            .collect::<Result<_, _>>()
            .map_err(|_| format!("block {block:?} of {mapping:?} is not (start,nnodes,ppn)"))?;
        match numbers[..] {
            [start, nnodes, ppn] if nnodes > 0 && ppn > 0 => blocks.push((start, nnodes, ppn)),
            _ => {
                return Err(format!(
                    "block {block:?} of {mapping:?} is not (start,nnodes,ppn)"
                ))
            }
        }
    }
    if blocks.is_empty() {
        return Err(format!("{mapping:?} has no blocks"));
    }
    // Expand block by block, stopping at `size` ranks (a block may claim far more).
    let mut nodes = Vec::with_capacity(size);
    'expand: loop {
        for &(start, nnodes, ppn) in &blocks {
            for node in start..start.saturating_add(nnodes) {
                for _ in 0..ppn {
                    if nodes.len() == size {
                        break 'expand;
                    }
                    nodes.push(node);
                }
            }
        }
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_as_hydra_writes_them() {
        assert_eq!(encode(&[0, 0, 0, 0]), "(vector,(0,1,4))");
        assert_eq!(encode(&[0, 0, 1, 1]), "(vector,(0,2,2))");
        assert_eq!(encode(&[0, 1, 0, 1]), "(vector,(0,2,1),(0,2,1))");
        assert_eq!(
            encode(&[0, 0, 1, 0, 0, 1]),
            "(vector,(0,1,2),(1,1,1),(0,1,2),(1,1,1))"
        );
        for nodes in [vec![0, 0, 1, 1], vec![0, 1, 0, 1], vec![0, 0, 1, 2, 2, 0]] {
            assert_eq!(decode(&encode(&nodes), nodes.len()).unwrap(), nodes);
        }
    }

    #[test]
    fn short_vectors_repeat_and_bad_ones_are_refused() {
        assert_eq!(decode("(vector,(0,2,1))", 4).unwrap(), [0, 1, 0, 1]);
        assert!(decode("vector,(0,2,1)", 2).is_err());
        assert!(decode("(vector,(0,2))", 2).is_err());
        assert!(decode("(vector,(0,0,1))", 2).is_err());
        assert!(decode("(vector)", 2).is_err());
        assert_eq!(
            decode("(vector,(0,1000000000,1000000000))", 3).unwrap(),
            [0, 0, 0]
        );
        assert_eq!(decode("(vector,(0,1,4))", 0).unwrap(), Vec::<usize>::new());
    }
}
