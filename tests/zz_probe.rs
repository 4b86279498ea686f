use kernelgate::inputs::*;
use kernelgate::case::Dtype;
#[test]
fn probe() {
    println!("fmix64(0)={:#x} fmix64(1)={:#x}", fmix64(0), fmix64(1));
    for (s,t,i) in [(0u64,0u32,0u64),(0,0,1),(1,0,0),(0,1,0),(42,1,123456789),(0xdead_beef,2,u64::MAX)] {
        let v = value_f32(s,t,i,Uniform::SYMMETRIC);
        println!("({s},{t},{i}) hash={:#x} unit={:e} unitbits={:#x} v={:e} bits={:#010x} bf16={:e} fp16={:e} idx100={}", hash(s,t,i), unit(s,t,i), unit(s,t,i).to_bits(), v, v.to_bits(), value(s,t,i,Uniform::SYMMETRIC,Dtype::Bf16), value(s,t,i,Uniform::SYMMETRIC,Dtype::Fp16), index_value(s,t,i,100));
    }
    let g = Uniform{lo:1.0,hi:2.0};
    // find an index where unit is max-ish
    let mut best=(0u64,0f32);
    for i in 0..50_000_000u64 { let u=unit(7,0,i); if u>best.1 {best=(i,u);} if u == 1.0 - 2f32.powi(-24) {break;} }
    println!("best {:?} {:#x} v={}", best, best.1.to_bits(), value_f32(7,0,best.0,g));
}
