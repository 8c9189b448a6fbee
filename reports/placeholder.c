/* placeholder until reports land */ typedef int smoke_reports_placeholder;
