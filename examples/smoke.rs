fn main() {
    for p in [1usize, 2, 3, 5, 8, 17] {
        let out = corecoll::run(p, |comm| {
            let (r, p) = (comm.rank(), comm.size());
            for len in [0usize, 1, 511, 512, 513, 100_000] {
                let send: Vec<u64> = (0..len as u64).map(|i| i * 1000 + r as u64).collect();
                let mut recv = vec![0u64; len];
                comm.sendrecv((r + 1) % p, &send, (r + p - 1) % p, &mut recv).unwrap();
                let src = (r + p - 1) % p;
                assert!(recv.iter().enumerate().all(|(i, &v)| v == i as u64 * 1000 + src as u64));
                comm.barrier().unwrap();
            }
            let sub = comm.split(Some(r % 2), p - r).unwrap().unwrap();
            sub.barrier().unwrap();
            (sub.rank(), sub.size())
        })
        .unwrap();
        println!("p={p}: {out:?}");
    }
    let t0 = std::time::Instant::now();
    let team = corecoll::Team::new(2).unwrap();
    let n = 200_000;
    team.run(|comm| {
        let mut b = [0u64];
        for _ in 0..n {
            if comm.rank() == 0 {
                comm.send(1, &[1u64]).unwrap();
                comm.recv(1, &mut b).unwrap();
            } else {
                comm.recv(0, &mut b).unwrap();
                comm.send(0, &[1u64]).unwrap();
            }
        }
    })
    .unwrap();
    println!("one-way latency ~ {:?}", t0.elapsed() / (2 * n));
    let t0 = std::time::Instant::now();
    team.run(|comm| {
        for _ in 0..n {
            comm.barrier().unwrap();
        }
    })
    .unwrap();
    println!("barrier p=2 ~ {:?}", t0.elapsed() / n);
    let team8 = corecoll::Team::new(8).unwrap();
    let n = 20_000;
    let t0 = std::time::Instant::now();
    team8
        .run(|comm| {
            for _ in 0..n {
                comm.barrier().unwrap();
            }
        })
        .unwrap();
    println!("barrier p=8 ~ {:?}", t0.elapsed() / n);
}
