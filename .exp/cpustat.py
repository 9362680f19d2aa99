import time,sys
out=open(sys.argv[1],'w'); end=time.time()+float(sys.argv[2])
prev=None
while time.time()<end:
    v=list(map(int,open('/proc/stat').readline().split()[1:]))
    t=time.time()
    if prev: 
        d=[a-b for a,b in zip(v,prev)]
        out.write(f"{t*1000:.0f} user {d[0]} nice {d[1]} sys {d[2]} idle {d[3]} iowait {d[4]} irq {d[5]} soft {d[6]} steal {d[7]}\n")
    prev=v; time.sleep(0.1)
