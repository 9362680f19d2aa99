# python3 threads.py SECONDS DELAY: per-thread CPU of node processes matching 'natslake' over a window
import os,time,sys,glob,re
def snap():
    out={}
    for p in glob.glob('/proc/[0-9]*'):
        try: cmd=open(p+'/cmdline','rb').read().replace(b'\0',b' ').decode()
        except: continue
        if 'node' not in cmd: continue
        for t in glob.glob(p+'/task/*'):
            try:
                s=open(t+'/stat').read()
                comm=s[s.index('(')+1:s.rindex(')')]
                f=s[s.rindex(')')+2:].split()
                out[(p.split('/')[-1],t.split('/')[-1])]=(comm,int(f[11])+int(f[12]),cmd[:120])
            except: pass
    return out
time.sleep(float(sys.argv[2]))
a=snap(); time.sleep(float(sys.argv[1])); b=snap()
rows=[]
for k,v in b.items():
    if k in a: rows.append((v[1]-a[k][1],k,v[0],v[2]))
rows.sort(reverse=True)
for d,k,c,cmd in rows[:30]:
    if d>0: print(f"{d/float(sys.argv[1]):6.1f}%  pid {k[0]} tid {k[1]} {c:16s} {cmd[-70:]}")
